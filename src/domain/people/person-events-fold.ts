import type { PersonEventsFold } from '../../stores/port.js';

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
 * step it pauses, so that ingestion keeps the rest at a full load, and the
 * fold falls behind until the load drops (reads then take more from the
 * events table). On PostgreSQL a step holds nothing ingestion waits for.
 */
export const FOLD_SHARE = 0.25;

/** The pause after a step of `ms` that held ingestion's writer. */
export function backOff(ms: number): number {
  return (ms * (1 - FOLD_SHARE)) / FOLD_SHARE;
}

/** The window a fold starts from, and keeps from pass to pass. */
export interface FoldPace {
  window: number;
}

/**
 * One pass: for each project, steps until it is caught up with its head,
 * FOLD_STEPS_PER_PASS steps at most in all. Between two steps the event loop
 * turns, so requests and commits queued meanwhile go first (on SQLite a step
 * waits its turn behind the commits queued before it).
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
      const step = await store.foldPersonEvents(projectId, pace.window);
      // Only a step that read a whole window says how long one takes.
      if (step.more) pace.window = nextWindow(pace.window, step.ms);
      folded += step.folded;
      // It held ingestion's writer: a pause, so that the fold takes FOLD_SHARE of it at most.
      await new Promise((resolve) => (step.heldWriter ? setTimeout(resolve, backOff(step.ms)) : setImmediate(resolve)));
      if (!step.more) break;
    }
  }
  return { folded, caughtUp: true };
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
