import { expect, it } from 'vitest';
import { seedJobOwners } from '../../../test/helpers/items.js';
import { passWrites } from '../../../test/helpers/pass-bundles.js';
import { sqliteTestStores } from '../../../test/helpers/sqlite.js';

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
