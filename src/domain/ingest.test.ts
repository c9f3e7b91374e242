import { afterEach, expect, it } from 'vitest';
import { tempDir } from '../../test/helpers/fixture.js';
import type { EnrichedItem, IngestTx } from '../stores/port.js';
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

function items(n: number, offset: number): EnrichedItem[] {
  return Array.from({ length: n }, (_, i) => {
    const k = i + offset;
    const identify = k % 5 === 0;
    return {
      index: i, type: identify ? 'identify' : 'track', event: identify ? null : 'e', distinctId: `user_${k}`,
      anonymousId: k % 3 === 0 ? `per_anon${k}` : null, sessionId: null, insertId: `i${k}`, timestamp: 1_795_000_000_000,
      properties: { k }, userAgent: null, droppedKeys: [], enrichment: {},
    };
  });
}

it('a batch for 500 different people costs as many store round trips as one for 5', async () => {
  const db = openSqlite(tmp.dir);
  db.prepare("INSERT INTO projects (id, org_id, name, api_enabled, created_at) VALUES ('prj_1', 'org_1', 'p', 1, 0)").run();
  const job = (list: EnrichedItem[]) => ({ projectId: 'prj_1', sourceId: 'src_1', keyId: 'key_1', receivedAt: 1_795_000_000_000, items: list, dryRun: false });
  const smallTx = new SqliteIngestTx(db);
  const small = counting(smallTx);
  await inWrite(smallTx, () => ingestInTx(small.tx, job(items(5, 0))));
  const bigTx = new SqliteIngestTx(db);
  const big = counting(bigTx);
  const out = await inWrite(bigTx, () => ingestInTx(big.tx, job(items(500, 1000))));
  expect(out.filter((o) => o.status === 'accepted')).toHaveLength(500);
  expect(big.calls()).toBe(small.calls());
  expect(big.calls()).toBeLessThanOrEqual(12);
  db.close();
});

it('jobs written in one pass come out as if sent one after the other', async () => {
  const db = openSqlite(tmp.dir);
  db.prepare("INSERT INTO projects (id, org_id, name, api_enabled, monthly_event_limit, created_at) VALUES ('prj_1', 'org_1', 'p', 1, 3, 0)").run();
  const tx = new SqliteIngestTx(db);
  const at = 1_795_000_000_000;
  const track = (index: number, insertId: string | null): EnrichedItem => ({
    index, type: 'track', event: 'e', distinctId: 'same_user', anonymousId: null, sessionId: null, insertId,
    timestamp: at, properties: {}, userAgent: null, droppedKeys: [], enrichment: {},
  });
  const job = (list: EnrichedItem[]) => ({ projectId: 'prj_1', sourceId: 'src_1', keyId: 'k', receivedAt: at, items: list, dryRun: false });
  const [a, b, c] = await inWrite(tx, () => ingestJobsInTx(tx, [job([track(0, 'x'), track(1, 'y')]), job([track(0, 'x'), track(1, null)]), job([track(0, 'z')])]));
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
