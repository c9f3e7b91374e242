import { expect, it } from 'vitest';
import type { FoldStep, PersonEventsFold } from '../../stores/port.js';
import { FOLD_SHARE, FOLD_STEP_MS, FOLD_WINDOW_MAX, FOLD_WINDOW_MIN, type FoldPace, backOff, foldPass, nextWindow } from './person-events-fold.js';

/** A store whose projects have `left` seqs to fold each, a step of a window taking `msPerSeq` per seq. */
function store(left: Record<string, number>, msPerSeq: number) {
  const steps: { projectId: string; window: number }[] = [];
  const fold: PersonEventsFold = {
    foldProjects: async () => Object.keys(left),
    foldPersonEvents: async (projectId, window): Promise<FoldStep> => {
      steps.push({ projectId, window });
      const n = Math.min(window, left[projectId]!);
      left[projectId]! -= n;
      return { folded: n, more: left[projectId]! > 0, ms: n * msPerSeq, heldWriter: false };
    },
  };
  return { fold, steps };
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

it('after a step that held ingestion\'s writer, pauses so that the fold takes FOLD_SHARE of it', () => {
  const step = 20;
  expect(step / (step + backOff(step))).toBeCloseTo(FOLD_SHARE, 10);
  expect(backOff(0)).toBe(0);
});
