import type { PersonEventsFold } from '../../stores/port.js';

/**
 * Seqs a step of the fold looks through (and so events it reads at most):
 * small enough that a step holds SQLite's one writer for a few milliseconds,
 * large enough that a fold keeps up with ingestion at a step every few
 * thousand events (docs/design.md, "A person's events").
 */
export const FOLD_WINDOW = 4096;

/** Steps a pass takes at most, all projects together: a pass never runs on for long. */
export const FOLD_STEPS_PER_PASS = 64;

/** How often a server folds what arrived since its last pass. */
export const FOLD_EVERY_MS = 1000;

/**
 * One pass: for each project, steps until it is caught up with its head,
 * FOLD_STEPS_PER_PASS steps at most in all. Between two steps the event loop
 * turns, so requests and commits queued meanwhile go first (on SQLite a step
 * waits its turn behind the commits queued before it).
 */
export async function foldPass(
  store: PersonEventsFold,
  opts: { window?: number; steps?: number; stopping?: () => boolean } = {},
): Promise<{ folded: number; caughtUp: boolean }> {
  const window = opts.window ?? FOLD_WINDOW;
  let steps = opts.steps ?? FOLD_STEPS_PER_PASS;
  let folded = 0;
  for (const projectId of await store.foldProjects()) {
    for (;;) {
      if (steps <= 0 || opts.stopping?.() === true) return { folded, caughtUp: false };
      steps--;
      const step = await store.foldPersonEvents(projectId, window);
      folded += step.folded;
      await new Promise((resolve) => setImmediate(resolve));
      if (!step.more) break;
    }
  }
  return { folded, caughtUp: true };
}

/**
 * A server's fold of its projects' events by person, off the request path:
 * a pass now, then every `everyMs` (sooner while a pass did not catch up),
 * never two at once. Several servers on one database may fold at once:
 * a step written twice leaves what one would.
 */
export function startPersonEventsFold(
  store: PersonEventsFold,
  report: { failed: (e: unknown) => void },
  everyMs = FOLD_EVERY_MS,
): { stop: () => Promise<void> } {
  let running: Promise<void> | null = null;
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  const schedule = (ms: number): void => {
    if (!stopped) timer = setTimeout(pass, ms).unref();
  };
  const pass = (): void => {
    running = (async () => {
      const began = performance.now();
      let behind = false;
      try {
        behind = !(await foldPass(store, { stopping: () => stopped })).caughtUp;
      } catch (e) {
        // An outage of the store must not end the fold for good: the next pass tries again.
        report.failed(e);
      }
      // Behind (the first start after the upgrade, a burst): the next pass after a pause as long
      // as this one took, so catching up takes at most about half of the process's time.
      schedule(behind ? Math.min(everyMs, performance.now() - began) : everyMs);
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
