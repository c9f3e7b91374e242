import type { Clock, ClockTimer } from '../../sdk/node/src/index.js';
import { TestClock } from './fixture.js';

/**
 * Real time, except that every idle wait a client takes (pacing to the
 * server's limits, backoff) is skipped: the clock jumps to the wait's end at
 * once. Other timers (a flush interval, a deadline) fire when the clock
 * passes them, by a jump or in real time. Shared by a server built in the
 * test and the client it serves, it compresses only the time the client
 * spends doing nothing; windows and quotas keep their real lengths.
 */
export class SkippingClock extends TestClock implements Clock {
  /** Milliseconds jumped over so far. */
  skipped = 0;
  private offset: number;
  private readonly pending = new Set<{ due: number; fire: () => void }>();

  constructor(start = Date.UTC(2026, 10, 22, 12, 0, 0)) {
    super(start);
    this.offset = start - Date.now();
  }

  override now = (): number => Date.now() + this.offset;

  override advance(ms: number): void {
    this.jumpTo(this.now() + ms);
  }

  schedule(fn: () => void, ms: number, idle: boolean): ClockTimer {
    const due = this.now() + ms;
    let done = false;
    const entry = {
      due,
      fire: () => {
        if (done) return;
        done = true;
        clearTimeout(real);
        this.pending.delete(entry);
        fn();
      },
    };
    const real = setTimeout(entry.fire, ms);
    this.pending.add(entry);
    // On the next turn, not now: a wait cancelled in the same turn (an answer came) jumps nothing.
    if (idle) setImmediate(() => !done && this.jumpTo(due));
    return {
      cancel: () => {
        done = true;
        clearTimeout(real);
        this.pending.delete(entry);
      },
      hold: (held) => void (held ? real.ref() : real.unref()),
    };
  }

  private jumpTo(at: number): void {
    const gap = at - this.now();
    if (gap > 0) {
      this.offset += gap;
      this.skipped += gap;
    }
    const now = this.now();
    for (const e of [...this.pending]) if (e.due <= now) e.fire();
  }
}
