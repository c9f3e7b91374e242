import { expect, it } from 'vitest';
import type { FoldStep, PersonEventsFold } from '../../stores/port.js';
import { FOLD_SHARE, FOLD_SHARE_LOADED, FOLD_STEP_MS, FOLD_WINDOW_MAX, FOLD_WINDOW_MIN, type FoldPace, backOff, foldPass, nextWindow } from './person-events-fold.js';

/**
 * A store whose projects have `left` seqs to fold each, a step of a window
 * taking `msPerSeq` per seq; every `mergeEvery`th fold step calls for a
 * merge of `mergeKeys` keys.
 */
function store(left: Record<string, number>, msPerSeq: number, merges: { every: number; keys: number } = { every: Infinity, keys: 0 }) {
  const steps: { projectId: string; window: number }[] = [];
  const mergeSteps: { projectId: string; batch: number }[] = [];
  let folds = 0;
  let merging = 0;
  const fold: PersonEventsFold = {
    foldProjects: async () => Object.keys(left),
    foldPersonEvents: async (projectId, window): Promise<FoldStep> => {
      steps.push({ projectId, window });
      const n = Math.min(window, left[projectId]!);
      left[projectId]! -= n;
      if (++folds % merges.every === 0) merging = merges.keys;
      return { folded: n, more: left[projectId]! > 0, ms: n * msPerSeq, heldWriter: false, merge: merging > 0 };
    },
    mergePersonEventRuns: async (projectId, batch): Promise<FoldStep> => {
      mergeSteps.push({ projectId, batch });
      const n = Math.min(batch, merging);
      merging -= n;
      return { folded: n, more: merging > 0, ms: n * msPerSeq, heldWriter: false, merge: merging > 0 };
    },
    expirePersonEventKeys: async () => ({ deleted: 0, next: null }),
  };
  return { fold, steps, mergeSteps };
}

it('sizes the window toward a step of FOLD_STEP_MS, at most doubled or halved at once, within its bounds', () => {
  expect(nextWindow(1000, FOLD_STEP_MS)).toBe(1000);
  expect(nextWindow(1000, FOLD_STEP_MS / 4)).toBe(2000);
  expect(nextWindow(1000, FOLD_STEP_MS * 1.25)).toBe(800);
  expect(nextWindow(1000, FOLD_STEP_MS * 10)).toBe(500);
  expect(nextWindow(FOLD_WINDOW_MIN, 1000)).toBe(FOLD_WINDOW_MIN);
  expect(nextWindow(FOLD_WINDOW_MAX, 0)).toBe(FOLD_WINDOW_MAX);
});

it('folds each project until caught up, the window following how long steps take, and keeps it for the next pass', async () => {
  // 0.01 ms a seq: a window of 1,000 takes FOLD_STEP_MS.
  const { fold, steps } = store({ a: 5000, b: 300 }, FOLD_STEP_MS / 1000);
  const pace: FoldPace = { window: FOLD_WINDOW_MIN };
  expect(await foldPass(fold, { pace })).toEqual({ folded: 5300, caughtUp: true });
  expect(steps.map((s) => s.window)).toEqual([256, 512, 1000, 1000, 1000, 1000, 1000, 1000]);
  expect(steps.map((s) => s.projectId)).toEqual(['a', 'a', 'a', 'a', 'a', 'a', 'a', 'b']);
  expect(pace.window).toBe(1000);
});

it('stops a pass after its steps, or when asked to, saying it is behind', async () => {
  const { fold, steps } = store({ a: 100_000 }, 0);
  expect(await foldPass(fold, { steps: 3 })).toEqual({ folded: 256 + 512 + 1024, caughtUp: false });
  expect(steps).toHaveLength(3);
  let stop = false;
  const pass = foldPass(fold, { stopping: () => stop });
  stop = true;
  expect((await pass).caughtUp).toBe(false);
});

it('after a step that held ingestion\'s writer, pauses so that the fold takes FOLD_SHARE of it, less as the thread is busier, FOLD_SHARE_LOADED when always busy', () => {
  const step = 20;
  const share = (busy?: number) => step / (step + backOff(step, busy));
  expect(share()).toBeCloseTo(FOLD_SHARE, 10);
  expect(share(0.5)).toBeCloseTo(FOLD_SHARE / 2, 10);
  expect(share(1)).toBeCloseTo(FOLD_SHARE_LOADED, 10);
  expect(share(0.99)).toBeCloseTo(FOLD_SHARE_LOADED, 10);
  expect(backOff(0)).toBe(0);
});

it('merges runs when a fold step says they call for it, before the next fold step, the batch sized as the window is', async () => {
  // 0.01 ms a key: a batch of 1,000 takes FOLD_STEP_MS.
  const { fold, steps, mergeSteps } = store({ a: 3 * FOLD_WINDOW_MIN }, FOLD_STEP_MS / 1000, { every: 2, keys: 2000 });
  const pace: FoldPace = { window: FOLD_WINDOW_MIN };
  expect(await foldPass(fold, { pace, steps: 100 })).toEqual({ folded: 3 * FOLD_WINDOW_MIN, caughtUp: true });
  expect(steps).toHaveLength(2);
  // After the second fold step: 256 + 512 + 1000 + 232 keys.
  expect(mergeSteps.map((m) => m.batch)).toEqual([256, 512, 1000, 1000]);
  expect(pace.merge).toBe(1000);
});

it('a pass out of steps in the middle of a merge says it is behind', async () => {
  const { fold, mergeSteps } = store({ a: 10 }, 0, { every: 1, keys: 100_000 });
  expect(await foldPass(fold, { steps: 4 })).toEqual({ folded: 10, caughtUp: false });
  expect(mergeSteps).toHaveLength(3);
});
