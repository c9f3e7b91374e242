/**
 * Timers that hold the process open only while someone awaits delivery: a
 * script that never flushes may exit at once, and one that awaits flush() or
 * close() keeps running until every item has its outcome.
 */
export class Timers {
  private readonly live = new Set<NodeJS.Timeout>();
  private held = 0;

  /** Resolves after `ms`, or at once when `signal` aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(t);
        this.live.delete(t);
        signal.removeEventListener('abort', done);
        resolve();
      };
      const t = this.start(done, ms);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  /** A one-shot timer under the same holding rule; returns a cancel function. */
  once(fn: () => void, ms: number): () => void {
    const t = this.start(() => {
      this.live.delete(t);
      fn();
    }, ms);
    return () => {
      clearTimeout(t);
      this.live.delete(t);
    };
  }

  /** Someone awaits delivery: every timer holds the process open until release(). */
  hold(): void {
    if (this.held++ === 0) for (const t of this.live) t.ref();
  }

  release(): void {
    if (--this.held === 0) for (const t of this.live) t.unref();
  }

  private start(fn: () => void, ms: number): NodeJS.Timeout {
    const t = setTimeout(fn, ms);
    if (this.held === 0) t.unref();
    this.live.add(t);
    return t;
  }
}
