import { type EventLoopUtilization, performance } from 'node:perf_hooks';
import type { FoldStep, PersonEventsFold } from '../../stores/port.js';

/**
 * How long a step of the fold should take: on SQLite it holds the one writer
 * meanwhile, so a request's commit may wait that much longer (docs/design.md,
 * "A person's events"). The window of seqs a step looks through is sized to
 * it from the last step, as an erasure's steps are on PostgreSQL.
 */
export const FOLD_STEP_MS = 20;

/** The window's bounds, in seqs (and so events read by a step at most); it starts at the least. */
export const FOLD_WINDOW_MIN = 256;
export const FOLD_WINDOW_MAX = 16_384;

/** The next step's window after one of `window` seqs took `tookMs`: toward FOLD_STEP_MS, at most doubled or halved at once. */
export function nextWindow(window: number, tookMs: number): number {
  const toward = tookMs > 0 ? (window * FOLD_STEP_MS) / tookMs : window * 2;
  const changed = Math.min(window * 2, Math.max(window / 2, toward));
  return Math.round(Math.min(FOLD_WINDOW_MAX, Math.max(FOLD_WINDOW_MIN, changed)));
}

/** Steps a pass takes at most, all projects together: a pass never runs on for long. */
export const FOLD_STEPS_PER_PASS = 64;

/** How often a server folds what arrived since its last pass. */
export const FOLD_EVERY_MS = 1000;

/**
 * The share of ingestion's writer the fold takes at most where it holds it
 * (SQLite: its one writer, on the thread that serves requests): after each
 * step it pauses, so that ingestion keeps the rest. The share shrinks as the
 * thread is busier between steps, to FOLD_SHARE_LOADED when it was busy all
 * the time (a full load, which the fold then costs next to nothing): the
 * fold falls behind until the load drops (reads then take more from the
 * events table). On PostgreSQL a step holds nothing ingestion waits for.
 */
export const FOLD_SHARE = 0.25;
export const FOLD_SHARE_LOADED = 0.02;

/** The pause after a step of `ms` that held ingestion's writer, the thread busy `busy` (0 to 1) of the time since the last pause began. */
export function backOff(ms: number, busy = 0): number {
  const share = Math.max(FOLD_SHARE_LOADED, FOLD_SHARE * (1 - busy));
  return (ms * (1 - share)) / share;
}

/**
 * The window a fold starts from, and keeps from pass to pass; `merge`, the
 * keys a merge step reads (sized the same way); `pausedAt`, the event
 * loop's use when the last pause began (how busy the thread was since says
 * how long the next pause is).
 */
export interface FoldPace {
  window: number;
  merge?: number;
  pausedAt?: EventLoopUtilization;
}

/**
 * One pass: for each project, steps until it is caught up with its head,
 * FOLD_STEPS_PER_PASS steps at most in all. Each fold step writes a run of
 * keys; when the project's runs call for a merge, merge steps follow before
 * the next fold step, so that a read's runs stay few while the fold catches
 * up. Between two steps the event loop turns, so requests and commits
 * queued meanwhile go first (on SQLite a step waits its turn behind the
 * commits queued before it), and a step that held ingestion's writer is
 * followed by its pause.
 */
export async function foldPass(
  store: PersonEventsFold,
  opts: { pace?: FoldPace; steps?: number; stopping?: () => boolean } = {},
): Promise<{ folded: number; caughtUp: boolean }> {
  const pace = opts.pace ?? { window: FOLD_WINDOW_MIN };
  let steps = opts.steps ?? FOLD_STEPS_PER_PASS;
  let folded = 0;
  for (const projectId of await store.foldProjects()) {
    for (;;) {
      if (steps <= 0 || opts.stopping?.() === true) return { folded, caughtUp: false };
      steps--;
      let busy = busySince(pace);
      const step = await store.foldPersonEvents(projectId, pace.window);
      // Only a step that read a whole window says how long one takes.
      if (step.more) pace.window = nextWindow(pace.window, step.ms);
      folded += step.folded;
      await turn(step, busy, pace);
      let merging = step.merge;
      while (merging) {
        if (steps <= 0 || opts.stopping?.() === true) return { folded, caughtUp: false };
        steps--;
        const batch = pace.merge ?? FOLD_WINDOW_MIN;
        busy = busySince(pace);
        const merged = await store.mergePersonEventRuns(projectId, batch);
        // A step that did not end its merge read about a whole batch.
        if (merged.more && merged.folded > 0) pace.merge = nextWindow(batch, merged.ms);
        await turn(merged, busy, pace);
        merging = merged.more;
      }
      if (!step.more) break;
    }
  }
  return { folded, caughtUp: true };
}

/** How busy the thread was since the last pause began: the pause, and the step's wait for its turn. */
function busySince(pace: FoldPace): number {
  return pace.pausedAt === undefined ? 0 : performance.eventLoopUtilization(pace.pausedAt).utilization;
}

/** The event loop's turn after a step; after one that held ingestion's writer, a pause (backOff). */
function turn(step: FoldStep, busy: number, pace: FoldPace): Promise<unknown> {
  if (!step.heldWriter) return new Promise((resolve) => setImmediate(resolve));
  pace.pausedAt = performance.eventLoopUtilization();
  return new Promise((resolve) => setTimeout(resolve, backOff(step.ms, busy)));
}

/**
 * A server's fold of its projects' events by person, off the request path:
 * a pass now, then every `everyMs` (at once while a pass did not catch up:
 * its steps pace themselves), never two at once. Several servers on one database may fold at once: a step written
 * twice leaves what one would.
 */
export function startPersonEventsFold(
  store: PersonEventsFold,
  report: { failed: (e: unknown) => void },
  everyMs = FOLD_EVERY_MS,
): { stop: () => Promise<void> } {
  let running: Promise<void> | null = null;
  let stopped = false;
  const pace: FoldPace = { window: FOLD_WINDOW_MIN };
  let timer: NodeJS.Timeout | null = null;
  const schedule = (ms: number): void => {
    if (!stopped) timer = setTimeout(pass, ms).unref();
  };
  const pass = (): void => {
    running = (async () => {
      const began = performance.now();
      let behind = false;
      try {
        behind = !(await foldPass(store, { pace, stopping: () => stopped })).caughtUp;
      } catch (e) {
        // An outage of the store must not end the fold for good: the next pass tries again.
        report.failed(e);
      }
      schedule(behind ? 0 : Math.max(0, everyMs - (performance.now() - began)));
    })();
  };
  pass();
  return {
    stop: async () => {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      await running;
    },
  };
}
