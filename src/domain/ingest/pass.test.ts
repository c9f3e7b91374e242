import { expect, it } from 'vitest';
import { type ItemSpec, ingestJob, seedJobOwners } from '../../../test/helpers/items.js';
import { sqliteTestStores } from '../../../test/helpers/sqlite.js';
import type { IngestTx } from '../../stores/port.js';
import { type JobResult, ingestPass } from './pass.js';

const stores = sqliteTestStores('inlet-pass-');

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

const outcomes = (r: JobResult | undefined) => {
  if (!Array.isArray(r)) throw new Error('the job was refused');
  return r;
};

it('a batch for 500 different people costs as many store round trips as one for 5', async () => {
  const store = stores.open();
  await seedJobOwners(store);
  const small = await store.transaction(async (tx) => {
    const c = counting(tx);
    await ingestPass(c.tx, [ingestJob(items(5, 0))], 0);
    return c.calls();
  });
  const [big, out] = await store.transaction(async (tx) => {
    const c = counting(tx);
    const r = await ingestPass(c.tx, [ingestJob(items(500, 1000))], 0);
    return [c.calls(), r] as const;
  });
  expect(outcomes(out[0]).filter((o) => o.status === 'accepted')).toHaveLength(500);
  expect(big).toBe(small);
  expect(big).toBeLessThanOrEqual(13);
});

it('jobs written in one pass come out as if sent one after the other', async () => {
  const store = stores.open();
  await seedJobOwners(store, { monthlyEventLimit: 3 });
  const track = (insertId: string | null): ItemSpec => ({ distinctId: 'same_user', insertId });
  const jobs = [ingestJob([track('x'), track('y')]), ingestJob([track('x'), track(null)]), ingestJob([track('z')])];
  const [a, b, c] = (await store.transaction((tx) => ingestPass(tx, jobs, 0))).map(outcomes);
  expect(a!.map((o) => o.status)).toEqual(['accepted', 'accepted']);
  expect(b!.map((o) => [o.index, o.status])).toEqual([[0, 'duplicate'], [1, 'accepted']]);
  expect(b![0]).toMatchObject({ eventId: (a![0] as { eventId: string }).eventId });
  // The limit of 3 is reached by the first three stored events, in order.
  expect(c!).toEqual([{ index: 0, status: 'dropped', reason: 'collection_paused' }]);
  const persons = new Set([...a!, ...b!].flatMap((o) => (o.status === 'accepted' ? [o.personId] : [])));
  expect(persons.size).toBe(1);
  expect(await store.usage('prj_1', '2026-11')).toBe(3);
});

it('a job whose key stopped working is refused whole, and the others of its pass are written', async () => {
  const store = stores.open();
  await seedJobOwners(store);
  const key = (id: string, fill: number) => ({ id, sourceId: 'src_1', hash: Buffer.alloc(32, fill), lastFour: 'yyyy', createdAt: 0, lastUsedAt: null, expiresAt: null, revokedAt: null });
  await store.admin.addKey(key('key_2', 2), { fits: () => true });
  // Rotated: key_3 replaces key_2, which expires at 500.
  await store.admin.addKey(key('key_3', 3), { fits: () => true, replaces: { keyId: 'key_2', expiresAt: 500 } });
  const jobs = [
    ingestJob([{ distinctId: 'a', insertId: 'shared' }], { keyId: 'key_2' }),
    ingestJob([{ distinctId: 'b', insertId: 'shared' }]),
    ingestJob([{ distinctId: 'c' }], { keyId: 'key_unknown' }),
  ];
  // key_2 expires at 500: at 1000 it no longer works.
  const [expired, good, unknown] = await store.transaction((tx) => ingestPass(tx, jobs, 1000));
  expect(expired).toBeInstanceOf(Error);
  expect(unknown).toBeInstanceOf(Error);
  // The refused job took nothing: its insert_id is free for the next.
  expect(outcomes(good).map((o) => o.status)).toEqual(['accepted']);
  expect((await store.listEvents('src_1', 10)).map((e) => e.distinctId)).toEqual(['b']);
  expect(await store.usage('prj_1', '2026-11')).toBe(1);
});
