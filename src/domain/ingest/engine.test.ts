import { describe, expect, it } from 'vitest';
import { type ItemSpec, ingestJob, seedJobOwners } from '../../../test/helpers/items.js';
import { sqliteTestStores } from '../../../test/helpers/sqlite.js';
import { type Batching, type Store, StoreUnavailableError } from '../../stores/port.js';
import type { SqliteStore } from '../../stores/sqlite/sqlite-store.js';
import { IngestEngine } from './engine.js';
import { KeyNoLongerWorksError } from './job.js';

const stores = sqliteTestStores('inlet-engine-');

/** An embedded store whose database refuses any event named "poison", by a constraint of its own. */
async function poisoned(lanes: 'one' | 'per source'): Promise<Store> {
  const store = stores.open((db) =>
    db.exec(`CREATE TRIGGER refuse_poison BEFORE INSERT ON events WHEN NEW.event = 'poison' BEGIN SELECT RAISE(ABORT, 'poison'); END`),
  );
  await seedJobOwners(store);
  return lanes === 'one' ? store : withLanePerSource(store);
}

/**
 * The store with PostgreSQL's policy of a lane per project+source: the engine
 * then starts transactions without waiting for the one before, and the store
 * still runs them in turn.
 */
function withLanePerSource(store: SqliteStore): Store {
  const batching: Batching = { lane: (projectId, sourceId) => `${projectId}\u0000${sourceId}`, maxItems: 2000, gatherTurns: 0 };
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'batching') return batching;
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

const track = (event: string, distinctId: string): ItemSpec => ({ event, distinctId });

for (const lanes of ['one', 'per source'] as const) {
  describe(`a store with ${lanes} lane(s)`, () => {
    it('one failing job among 16 costs about 2·log2(16) passes more, not 16, and only it fails', async () => {
      const store = await poisoned(lanes);
      const engine = new IngestEngine(store);
      const jobs = Array.from({ length: 16 }, (_, i) => ingestJob([track(i === 11 ? 'poison' : 'ok', `u${i}`)]));
      const answers = await Promise.allSettled(jobs.map((j) => engine.submit(j)));
      expect(answers.map((a) => a.status)).toEqual(jobs.map((_, i) => (i === 11 ? 'rejected' : 'fulfilled')));
      const failure = (answers[11] as PromiseRejectedResult).reason;
      expect(failure).toBeInstanceOf(StoreUnavailableError);
      expect((failure as StoreUnavailableError).refused).toBe(true);
      // The whole batch, then halves down to the job: 1 + 2·log2(16) = 9.
      // (With a lane per source the first job goes alone while the others gather: one
      // more.) Retrying each job alone after the first failure took 1 + 16.
      expect(engine.stats.passes).toBe(lanes === 'one' ? 9 : 10);
      expect(engine.stats.commits).toBe(lanes === 'one' ? 4 : 5);
      expect(await store.listEvents('src_1', 100)).toHaveLength(15);
      expect(await store.usage('prj_1', '2026-11')).toBe(15);
    });

    it('jobs come out in arrival order after a split: the first of two repeats is the one stored', async () => {
      const store = await poisoned(lanes);
      const engine = new IngestEngine(store);
      const jobs = [
        ingestJob([track('poison', 'a')]),
        ingestJob([{ event: 'ok', distinctId: 'b', insertId: 'same' }]),
        ingestJob([{ event: 'ok', distinctId: 'c', insertId: 'same' }]),
      ];
      const [bad, first, second] = await Promise.allSettled(jobs.map((j) => engine.submit(j)));
      expect(bad!.status).toBe('rejected');
      expect((first as PromiseFulfilledResult<{ status: string }[]>).value[0]!.status).toBe('accepted');
      expect((second as PromiseFulfilledResult<{ status: string }[]>).value[0]!.status).toBe('duplicate');
    });

    it('a key revoked before its job is written gets KeyNoLongerWorksError, and nothing is stored or metered', async () => {
      const store = await poisoned(lanes);
      const engine = new IngestEngine(store);
      await store.admin.revokeKey('key_1', 1);
      await expect(engine.submit(ingestJob([track('ok', 'u')]))).rejects.toBeInstanceOf(KeyNoLongerWorksError);
      expect(await store.listEvents('src_1', 10)).toEqual([]);
      expect(await store.usage('prj_1', '2026-11')).toBe(0);
    });
  });
}

it('on a single-writer store, a failing project+source batch leaves the other batches of its commit committed once', async () => {
  const store = await poisoned('one');
  await store.admin.createSource({ id: 'src_2', projectId: 'prj_1', name: 'Other', filterBots: true, recordIp: false, createdAt: 0 });
  const engine = new IngestEngine(store);
  const answers = await Promise.allSettled([
    engine.submit(ingestJob([track('poison', 'a')])),
    engine.submit(ingestJob([track('ok', 'b')], { sourceId: 'src_2' })),
    engine.submit(ingestJob([track('ok', 'c')])),
  ]);
  expect(answers.map((a) => a.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
  expect((await store.listEvents('src_2', 10)).map((e) => e.distinctId)).toEqual(['b']);
  expect((await store.listEvents('src_1', 10)).map((e) => e.distinctId)).toEqual(['c']);
});

it('a dry run is a transaction rolled back: it answers as a write would and keeps nothing', async () => {
  const store = await poisoned('one');
  const engine = new IngestEngine(store);
  const [out] = await engine.submit(ingestJob([{ event: 'ok', distinctId: 'u', insertId: 'd' }], { dryRun: true }));
  expect(out).toMatchObject({ status: 'accepted', personIsNew: true });
  expect(await store.listEvents('src_1', 10)).toEqual([]);
  expect(await store.findPerson('prj_1', { distinctId: 'u' })).toBeNull();
  expect(engine.stats).toEqual({ passes: 1, commits: 0 });
});

it('a store that is away fails the batch at once, without splitting it', async () => {
  const store = await poisoned('one');
  let transactions = 0;
  const away: Store = Object.assign(Object.create(store) as Store, {
    transaction: async () => {
      transactions++;
      throw new StoreUnavailableError('away');
    },
  });
  const engine = new IngestEngine(away);
  const answers = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => engine.submit(ingestJob([track('ok', `u${i}`)]))));
  expect(answers.every((a) => a.status === 'rejected')).toBe(true);
  expect(transactions).toBe(1);
});

it('tells its observer of every commit (jobs and items) and every failed one', async () => {
  const store = await poisoned('one');
  // Each transaction takes 40 ms of the engine's timer: each commit lasted exactly that.
  let ms = 1_000;
  const timed: Store = Object.assign(Object.create(store) as Store, {
    transaction: (...a: Parameters<Store['transaction']>) => ((ms += 40), store.transaction(...a)),
  });
  const seen = { commits: 0, jobs: 0, items: 0, failed: 0 };
  const durations: number[] = [];
  const engine = new IngestEngine(
    timed,
    Date.now,
    {
      committed: (seconds, jobs, items) => {
        durations.push(seconds);
        seen.commits++;
        seen.jobs += jobs;
        seen.items += items;
      },
      failed: () => seen.failed++,
    },
    () => ms,
  );
  const jobs = Array.from({ length: 16 }, (_, i) => ingestJob([track(i === 11 ? 'poison' : 'ok', `u${i}`), track('ok', `v${i}`)]));
  await Promise.allSettled(jobs.map((j) => engine.submit(j)));
  // The whole batch, 8..15, 8..11, 10..11 and 11 alone failed; 0..7, 12..15, 8..9 and 10 committed.
  expect(seen).toEqual({ commits: 4, jobs: 15, items: 30, failed: 5 });
  expect(durations).toEqual([0.04, 0.04, 0.04, 0.04]);
});
