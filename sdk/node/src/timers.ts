import type { Clock, ClockTimer } from './clock.js';

/**
 * Timers that hold the process open only while someone awaits delivery: a
 * script that never flushes may exit at once, and one that awaits flush() or
 * close() keeps running until every item has its outcome.
 */
export class Timers {
  private readonly live = new Set<ClockTimer>();
  private held = 0;

  constructor(private readonly clock: Clock) {}

  /**
   * Resolves after `ms` (an idle wait: see Clock), or at once when `signal`
   * aborts. An infinite `ms` waits for the signal alone.
   */
  sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      let t: ClockTimer | null = null;
      const done = (): void => {
        if (t !== null) {
          t.cancel();
          this.live.delete(t);
        }
        signal.removeEventListener('abort', done);
        resolve();
      };
      signal.addEventListener('abort', done, { once: true });
      if (Number.isFinite(ms)) t = this.start(done, Math.max(0, ms), true);
    });
  }

  /** A one-shot timer under the same holding rule; returns a cancel function. An infinite `ms` never fires. */
  once(fn: () => void, ms: number): () => void {
    if (!Number.isFinite(ms)) return () => {};
    const t = this.start(
      () => {
        this.live.delete(t);
        fn();
      },
      Math.max(0, ms),
      false,
    );
    return () => {
      t.cancel();
      this.live.delete(t);
    };
  }

  /** Someone awaits delivery: every timer holds the process open until release(). */
  hold(): void {
    if (this.held++ === 0) for (const t of this.live) t.hold(true);
  }

  release(): void {
    if (--this.held === 0) for (const t of this.live) t.hold(false);
  }

  private start(fn: () => void, ms: number, idle: boolean): ClockTimer {
    const t = this.clock.schedule(fn, ms, idle);
    if (this.held === 0) t.hold(false);
    this.live.add(t);
    return t;
  }
}
