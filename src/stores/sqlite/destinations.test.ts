import { expect, it, vi } from 'vitest';
import { seedJobOwners } from '../../../test/helpers/items.js';
import { passWrites } from '../../../test/helpers/pass-bundles.js';
import { sqliteTestStores } from '../../../test/helpers/sqlite.js';
import { SqlitePageReader } from './page-reader.js';

const stores = sqliteTestStores('inlet-sqlite-destinations-');

const row = (id: string) => ({
  id, projectId: 'prj_1', sourceId: 'src_1', event: 'paid', distinctId: 'u', anonymousId: null, personId: 'per_1', sessionId: null,
  timestamp: 1_795_000_000_000, receivedAt: 1_795_000_000_000, insertId: null, properties: '{}',
});

it('delivery does not read the rows of an ingest transaction still open on the store\'s connection (they may be rolled back)', async () => {
  const store = stores.open();
  await seedJobOwners(store);
  const head = await store.destinations.head('prj_1');
  let release: () => void = () => undefined;
  const held = new Promise<void>((resolve) => (release = resolve));
  let inserted: () => void = () => undefined;
  const open = new Promise<void>((resolve) => (inserted = resolve));
  const tx = store
    .transaction(async (t) => {
      await t.write({ projectId: 'prj_1', sourceId: 'src_1', now: 1_795_000_000_000 }, passWrites({ events: [row('00000000-0000-7000-8000-000000000001')] }));
      inserted();
      await held;
      throw new Error('rolled back, as a failed write is');
    })
    .catch(() => undefined);
  await open;
  // The store's own connection is inside that transaction now and would see its row.
  expect(await store.destinations.head('prj_1')).toBe(head);
  expect((await store.destinations.read('prj_1', 0, head + 100, 10)).events).toEqual([]);
  release();
  await tx;
  expect((await store.destinations.read('prj_1', 0, head + 100, 10)).events).toEqual([]);
});

it('the console project page counted destination lag on SQLite\'s main thread: the count and the oldest are read on the page-read thread', async () => {
  const store = stores.open((db) =>
    db.prepare(
      `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 20000)
       INSERT INTO events (seq, id, project_id, source_id, event, person_id, timestamp, received_at, properties)
       SELECT i, 'evt_' || i, 'prj_1', 'src_1', 'paid', 'per_1', 1795000000000 + i, 1795000000000 + i, '{"plan":"pro"}' FROM c`,
    ).run(),
  );
  const d = { projectId: 'prj_1', sources: [], events: ['paid'] };
  // The thread's reads (page-reader.ts): on the main thread a count is one synchronous statement, every request waiting behind it.
  const onThread = vi.spyOn(SqlitePageReader.prototype, 'rows');
  expect(await store.destinations.countPast(d, 0, 20_000, 1_000_000)).toBe(20_000);
  expect(await store.destinations.oldestPast(d, 10, 20_000)).toBe(1_795_000_000_011);
  expect(onThread).toHaveBeenCalledTimes(2);
  onThread.mockRestore();
});
