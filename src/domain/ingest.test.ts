import { afterEach, expect, it } from 'vitest';
import { tempDir } from '../../test/helpers/fixture.js';
import { type ItemSpec, ingestJob } from '../../test/helpers/items.js';
import type { IngestTx } from '../stores/port.js';
import { SqliteIngestTx } from '../stores/sqlite/ingest-tx.js';
import { openSqlite } from '../stores/sqlite/open.js';
import { ingestInTx, ingestJobsInTx } from './ingest.js';

const tmp = tempDir('inlet-ingest-');
afterEach(() => tmp.remove());

/** Counts every call the algorithm makes on the transaction: each is at most one round trip on a networked store. */
function counting(tx: IngestTx): { tx: IngestTx; calls: () => number } {
  let n = 0;
  const proxy = new Proxy(tx, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (...args: unknown[]) => (n++, v.apply(target, args)) : v;
    },
  });
  return { tx: proxy, calls: () => n };
}

/** Runs `fn` inside a write transaction, as the store does. */
async function inWrite<T>(tx: SqliteIngestTx, fn: () => Promise<T>): Promise<T> {
  tx.begin();
  const out = await fn();
  tx.commit();
  return out;
}

function items(n: number, offset: number): ItemSpec[] {
  return Array.from({ length: n }, (_, i) => {
    const k = i + offset;
    const identify = k % 5 === 0;
    return {
      type: identify ? 'identify' : 'track', distinctId: `user_${k}`, anonymousId: k % 3 === 0 ? `per_anon${k}` : null,
      insertId: `i${k}`, properties: { k },
    };
  });
}

it('a batch for 500 different people costs as many store round trips as one for 5', async () => {
  const db = openSqlite(tmp.dir);
  db.prepare("INSERT INTO projects (id, org_id, name, api_enabled, created_at) VALUES ('prj_1', 'org_1', 'p', 1, 0)").run();
  const smallTx = new SqliteIngestTx(db);
  const small = counting(smallTx);
  await inWrite(smallTx, () => ingestInTx(small.tx, ingestJob(items(5, 0))));
  const bigTx = new SqliteIngestTx(db);
  const big = counting(bigTx);
  const out = await inWrite(bigTx, () => ingestInTx(big.tx, ingestJob(items(500, 1000))));
  expect(out.filter((o) => o.status === 'accepted')).toHaveLength(500);
  expect(big.calls()).toBe(small.calls());
  expect(big.calls()).toBeLessThanOrEqual(12);
  db.close();
});

it('jobs written in one pass come out as if sent one after the other', async () => {
  const db = openSqlite(tmp.dir);
  db.prepare("INSERT INTO projects (id, org_id, name, api_enabled, monthly_event_limit, created_at) VALUES ('prj_1', 'org_1', 'p', 1, 3, 0)").run();
  const tx = new SqliteIngestTx(db);
  const track = (insertId: string | null): ItemSpec => ({ distinctId: 'same_user', insertId });
  const jobs = [ingestJob([track('x'), track('y')]), ingestJob([track('x'), track(null)]), ingestJob([track('z')])];
  const [a, b, c] = await inWrite(tx, () => ingestJobsInTx(tx, jobs));
  expect(a!.map((o) => o.status)).toEqual(['accepted', 'accepted']);
  expect(b!.map((o) => [o.index, o.status])).toEqual([[0, 'duplicate'], [1, 'accepted']]);
  expect(b![0]).toMatchObject({ eventId: (a![0] as { eventId: string }).eventId });
  // The limit of 3 is reached by the first three stored events, in order.
  expect(c!).toEqual([{ index: 0, status: 'dropped', reason: 'collection_paused' }]);
  const persons = new Set([...a!, ...b!].flatMap((o) => (o.status === 'accepted' ? [o.personId] : [])));
  expect(persons.size).toBe(1);
  expect(tx.usage('prj_1', '2026-11')).toBe(3);
  db.close();
});
