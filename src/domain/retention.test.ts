import { expect, it } from 'vitest';
import type { ErasureStore, ExpiryStep, RetentionStore } from '../stores/port.js';
import { ERASURE_STALE_MS, expireAll, retentionCutoff, startRetention } from './retention.js';

/** A store whose steps are scripted; it records the `now` and batch of each call. */
function scripted(steps: ExpiryStep[]): RetentionStore & { calls: [number, number][] } {
  const calls: [number, number][] = [];
  return {
    calls,
    expireEvents: async (now, batch) => {
      calls.push([now, batch]);
      return steps.shift() ?? { deleted: 0, dropped: 0, more: false };
    },
  };
}

it('the cutoff is the retention in whole days before now', () => {
  expect(retentionCutoff(Date.UTC(2026, 10, 23), 400)).toBe(Date.UTC(2025, 9, 19));
});

it('expireAll repeats steps until one says nothing is left, and adds them up', async () => {
  const store = scripted([
    { deleted: 5, dropped: 0, more: true },
    { deleted: 0, dropped: 1, more: true },
    { deleted: 2, dropped: 0, more: false },
  ]);
  expect(await expireAll(store, 1000, { batch: 5 })).toEqual({ deleted: 7, dropped: 1 });
  expect(store.calls).toEqual([[1000, 5], [1000, 5], [1000, 5]]);
});

it('a server runs a pass at start; a failed pass is reported and the next one runs; stop waits for the pass under way', async () => {
  const reports: unknown[] = [];
  let fail = true;
  const asked: [number, number][] = [];
  const store: RetentionStore & Pick<ErasureStore, 'finishErasures'> = {
    finishErasures: async (now, staleMs) => {
      asked.push([now, staleMs]);
      return { erasures: 1, eventsDeleted: 7 };
    },
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
  expect(asked.slice(0, 2)).toEqual([[42, ERASURE_STALE_MS], [42, ERASURE_STALE_MS]]);
});
