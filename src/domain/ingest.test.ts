import { afterEach, expect, it } from 'vitest';
import { tempDir } from '../../test/helpers/fixture.js';
import type { EnrichedItem, IngestTx } from '../stores/port.js';
import { SqliteIngestTx } from '../stores/sqlite/ingest-tx.js';
import { openSqlite } from '../stores/sqlite/open.js';
import { ingestInTx } from './ingest.js';

const tmp = tempDir('inlet-ingest-');
afterEach(() => tmp.remove());

/** Counts every call the algorithm makes on the transaction: each is one round trip on a networked store. */
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
  const small = counting(new SqliteIngestTx(db));
  await ingestInTx(small.tx, job(items(5, 0)));
  const big = counting(new SqliteIngestTx(db));
  const out = await ingestInTx(big.tx, job(items(500, 1000)));
  expect(out.filter((o) => o.status === 'accepted')).toHaveLength(500);
  expect(big.calls()).toBe(small.calls());
  expect(big.calls()).toBeLessThanOrEqual(12);
  db.close();
});
