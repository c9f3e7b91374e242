import { afterEach, expect, it } from 'vitest';
import { Random } from '../../../bench/random.js';
import { tempDir } from '../../../test/helpers/fixture.js';
import { type ItemSpec, collectorOn, ingestJob } from '../../../test/helpers/items.js';
import { Collector } from '../../domain/collector.js';
import { browserIdentify } from '../../domain/people/browser-identify.js';
import type { IngestTx, PassQuery, PassState, Store } from '../port.js';
import { personLinkCacheOf } from './person-link-cache.js';
import { type Db, openSqlite } from './open.js';
import { SqliteStore } from './sqlite-store.js';

const tmp = tempDir('inlet-link-fuzz-');
afterEach(() => tmp.remove());

// Every answer findLinks gives, served from memory or not, is checked against
// the database read inside the same transaction, on the same connection.
const wrong: string[] = [];
let asked = 0;
let fromMemory = 0;

/** A store on `db` whose transactions check each findLinks answer against a read of the database. */
function checkedStore(db: Db): Store {
  const store = new SqliteStore(db);
  const cache = personLinkCacheOf(db);
  const truth = db.prepare(
    `SELECT l.distinct_id AS key, coalesce(m.id, p.id) AS id, coalesce(m.kind, p.kind) AS kind
     FROM person_links l
     JOIN persons p ON p.project_id = l.project_id AND p.id = l.person_id
     LEFT JOIN persons m ON m.project_id = p.project_id AND m.id = p.merged_into
     WHERE l.project_id = ? AND l.distinct_id IN (SELECT value FROM json_each(?))`,
  );
  const checkedTx = (tx: IngestTx): IngestTx =>
    new Proxy(tx, {
      get: (t, p) => {
        if (p !== 'read') return bound(t, p);
        return (q: PassQuery) => {
          const ids = q.linkedIds;
          const rows = truth.all(q.projectId, JSON.stringify(ids)) as { key: string; id: string; kind: string }[];
          const expected = new Map(rows.map((r) => [r.key, `${r.id}/${r.kind}`]));
          for (const id of ids) if (cache.get(q.projectId, id) !== undefined) fromMemory++;
          const check = (answer: PassState) => {
            for (const id of ids) {
              asked++;
              const got = answer.links.get(id);
              const said = got === undefined ? undefined : `${got.id}/${got.kind}`;
              if (said !== expected.get(id)) wrong.push(`${q.projectId} ${id}: memory said ${said}, the database ${expected.get(id)}`);
            }
            return answer;
          };
          const answer = t.read(q);
          return answer instanceof Promise ? answer.then(check) : check(answer);
        };
      },
    });
  return new Proxy(store, {
    get: (t, p) =>
      p === 'transaction'
        ? <T>(fn: (tx: IngestTx) => Promise<T>, o?: { keep?: boolean }) => t.transaction((tx) => fn(checkedTx(tx)), o)
        : bound(t, p),
  });
}

function bound(target: object, p: string | symbol): unknown {
  const v = Reflect.get(target, p, target) as unknown;
  return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
}

it('person links from memory always agree with the database, through merges, dry runs, failed jobs and commits, admin writes and another connection', async () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    const r = new Random(seed);
    const dir = `${tmp.dir}/s${seed}`;
    const db = openSqlite(dir);
    const collector = await collectorOn(checkedStore(db));
    db.prepare("INSERT INTO projects (id, org_id, name, api_enabled, created_at) VALUES ('prj_2', 'org_1', 'p', 1, 0)").run();
    const otherCommitter = new Collector(checkedStore(openSqlite(dir)));
    const distinctId = () => `u${r.int(6)}`;
    // Browser ids, and now and then the id of a person already made, so that
    // persons with several links, and chains of merges, get merged too.
    const seen: string[] = [];
    const anonymousId = () => (seen.length > 0 && r.chance(0.3) ? seen[r.int(seen.length)]! : `per_b${r.int(4)}`);
    const item = (): ItemSpec => {
      const k = r.int(10);
      if (k < 5) return { distinctId: distinctId() };
      if (k < 8) return { type: 'identify', distinctId: distinctId(), anonymousId: anonymousId() };
      if (k < 9) return { type: 'identify', distinctId: distinctId(), properties: { plan: 'pro' } };
      return { distinctId: distinctId(), anonymousId: anonymousId() };
    };
    for (let round = 0; round < 120; round++) {
      const pending: Promise<unknown>[] = [];
      for (let j = 1 + r.int(5); j > 0; j--) {
        const items = Array.from({ length: 1 + r.int(3) }, item);
        // A track item without an event name fails its job, after the others were written.
        if (r.chance(0.1)) items.push({ distinctId: distinctId(), event: null });
        const job = ingestJob(items, { projectId: r.chance(0.8) ? 'prj_1' : 'prj_2', sourceId: `src_${r.int(3)}`, dryRun: r.chance(0.15) });
        const answer = r.chance(0.1) ? otherCommitter.ingest(job) : collector.ingest(job);
        pending.push(answer.then((outcomes) => outcomes.forEach((o) => o.status === 'accepted' && o.personId !== null && seen.push(o.personId))));
      }
      if (r.chance(0.1)) pending.push(collector.transaction((tx) => browserIdentify(tx, 'prj_1', anonymousId(), distinctId(), 1)));
      const failCommit = r.chance(0.1);
      if (failCommit) {
        // A deferred foreign key fails the COMMIT of any write that stores an event.
        db.pragma('foreign_keys = ON');
        db.exec(`CREATE TABLE IF NOT EXISTS parent (id TEXT PRIMARY KEY);
          CREATE TABLE IF NOT EXISTS child (parent_id TEXT REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED);
          CREATE TRIGGER commit_fails AFTER INSERT ON events BEGIN INSERT INTO child VALUES ('none'); END;`);
      }
      await Promise.allSettled(pending);
      if (failCommit) {
        db.exec('DROP TRIGGER commit_fails');
        db.pragma('foreign_keys = OFF');
      }
    }
    await otherCommitter.close();
    await collector.close();
  }
  expect(wrong).toEqual([]);
  // The check is worth something only if memory served a good share.
  expect(fromMemory).toBeGreaterThan(asked / 4);
}, 120_000);
