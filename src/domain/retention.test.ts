import { expect, it } from 'vitest';
import type { ErasureStore, ExpiryPlan, ExpiryStep, RetentionStore } from '../stores/port.js';
import { DEFAULT_RETENTION_DAYS, ERASURE_STALE_MS, expireAll, expiryPlan, finishErasures, retentionCutoff, startRetention } from './retention.js';

const DAY = 86_400_000;

/** No project: nothing is asked of the store but its steps. */
const noProjects = { projectRetentions: async () => [] };

/** A store of one project kept 30 days whose steps are scripted; it records the plan and batch of each call. */
function scripted(steps: ExpiryStep[]): RetentionStore & { calls: [ExpiryPlan, number][] } {
  const calls: [ExpiryPlan, number][] = [];
  return {
    calls,
    projectRetentions: async () => [{ projectId: 'prj_1', retentionDays: 30 }],
    expireEvents: async (plan, batch) => {
      calls.push([plan, batch]);
      return steps.shift() ?? { deleted: 0, dropped: 0, more: false };
    },
  };
}

it('the cutoff is the retention in whole days before now', () => {
  expect(retentionCutoff(Date.UTC(2026, 10, 23), 400)).toBe(Date.UTC(2025, 9, 19));
});

it("each project expires at its own cutoff, and a day goes for every project at once only past the longest retention", () => {
  const now = 1000 * DAY;
  expect(expiryPlan(now, [{ projectId: 'prj_a', retentionDays: 30 }, { projectId: 'prj_b', retentionDays: 90 }])).toEqual({
    cutoffs: [{ projectId: 'prj_a', before: 970 * DAY }, { projectId: 'prj_b', before: 910 * DAY }],
    allBefore: 910 * DAY,
  });
  expect(expiryPlan(now, [])).toEqual({ cutoffs: [], allBefore: (1000 - DEFAULT_RETENTION_DAYS) * DAY });
});

it('expireAll repeats steps until one says nothing is left, and adds them up', async () => {
  const store = scripted([
    { deleted: 5, dropped: 0, more: true },
    { deleted: 0, dropped: 1, more: true },
    { deleted: 2, dropped: 0, more: false },
  ]);
  const plan = { cutoffs: [{ projectId: 'prj_1', before: 40 * DAY }], allBefore: 40 * DAY };
  expect(await expireAll(store, 70 * DAY, { batch: 5 })).toEqual({ deleted: 7, dropped: 1 });
  expect(store.calls).toEqual([[plan, 5], [plan, 5], [plan, 5]]);
});

/** Pending erasures by id: how many events each deletes, or the error it fails with. */
function erasures(plan: Record<number, number | Error>, asked: number[] = []): Pick<ErasureStore, 'staleErasures' | 'deleteErasedEvents' | 'endErasure'> {
  return {
    staleErasures: async (idleMs) => {
      asked.push(idleMs);
      return Object.keys(plan).map((id) => ({ id: Number(id), projectId: 'prj_1', personIds: ['per_1'], arrivedThrough: 9 }));
    },
    deleteErasedEvents: async (e) => {
      const outcome = plan[e.id]!;
      if (outcome instanceof Error) throw outcome;
      return { eventsDeleted: outcome, done: true };
    },
    endErasure: async () => undefined,
  };
}

it('a server runs a pass at start; a failed pass is reported and the next one runs; stop waits for the pass under way', async () => {
  const reports: unknown[] = [];
  let fail = true;
  const asked: number[] = [];
  const store: RetentionStore & Pick<ErasureStore, 'staleErasures' | 'deleteErasedEvents' | 'endErasure'> = {
    ...erasures({ 1: 7 }, asked),
    ...noProjects,
    expireEvents: async () => {
      if (fail) {
        fail = false;
        throw new Error('store away');
      }
      return { deleted: 3, dropped: 0, more: false };
    },
  };
  let second!: () => void;
  const ran = new Promise<void>((r) => (second = r));
  const r = startRetention(store, () => 42, { done: (x) => (reports.push(x), second()), failed: (e) => reports.push((e as Error).message) }, 1);
  await ran;
  await r.stop();
  expect(reports.slice(0, 2)).toEqual(['store away', { deleted: 3, dropped: 0, erasuresFinished: 1, erasedEvents: 7 }]);
  // Each pass first finishes the erasures a stopped process left.
  expect(asked.slice(0, 2)).toEqual([ERASURE_STALE_MS, ERASURE_STALE_MS]);
});

it('an erasure that fails holds up neither the others nor expiry, and is reported', async () => {
  const reports: unknown[] = [];
  const store = { ...erasures({ 1: new Error('day too big'), 2: 5 }), ...noProjects, expireEvents: async (): Promise<ExpiryStep> => ({ deleted: 4, dropped: 1, more: false }) };
  let done!: () => void;
  const ran = new Promise<void>((r) => (done = r));
  const r = startRetention(store, () => 42, { done: (x) => (reports.push(x), done()), failed: (e) => reports.push((e as Error).message) }, 60_000);
  await ran;
  await r.stop();
  expect(reports).toEqual(['day too big', { deleted: 4, dropped: 1, erasuresFinished: 0, erasedEvents: 0 }]);
  // Called alone, the second erasure is finished before the first one's failure is thrown.
  const finished: number[] = [];
  const spy = erasures({ 1: new Error('day too big'), 2: 5 });
  const finish = spy.deleteErasedEvents;
  spy.deleteErasedEvents = async (e, o) => (finished.push(e.id), finish(e, o));
  await expect(finishErasures(spy, 0)).rejects.toThrow('day too big');
  expect(finished).toEqual([1, 2]);
});

it('sweeps the keys of a person\'s events past each project\'s retention at the first pass, then once a day, a step at a time', async () => {
  const swept: { projectId: string; before: number; after: string | null }[] = [];
  let now = 1_000 * DAY;
  const store = {
    ...erasures({}),
    projectRetentions: async () => [{ projectId: 'prj_a', retentionDays: 30 }],
    expireEvents: async (): Promise<ExpiryStep> => ({ deleted: 0, dropped: 0, more: false }),
    // Two steps a sweep: one to per_m, one from there to the end.
    expirePersonEventKeys: async (projectId: string, before: number, after: string | null) => {
      swept.push({ projectId, before, after });
      return { deleted: 1, next: after === null ? 'per_m' : null };
    },
  };
  let passes = 0;
  const failures: unknown[] = [];
  let enough!: () => void;
  const ran = new Promise<void>((r) => (enough = r));
  const r = startRetention(store, () => now, {
    done: () => {
      // Each pass half a day after the one before.
      now += DAY / 2;
      if (++passes === 3) enough();
    },
    failed: (e) => failures.push(e),
  }, 1);
  await ran;
  await r.stop();
  expect(failures).toEqual([]);
  const first = retentionCutoff(1_000 * DAY, 30);
  expect(swept.slice(0, 4)).toEqual([
    { projectId: 'prj_a', before: first, after: null },
    { projectId: 'prj_a', before: first, after: 'per_m' },
    // Not at the second pass (half a day on); at the third (a day on).
    { projectId: 'prj_a', before: first + DAY, after: null },
    { projectId: 'prj_a', before: first + DAY, after: 'per_m' },
  ]);
});
