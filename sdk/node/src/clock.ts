/** The time the client reads and the timers it sets: the real ones unless `options.clock` gives others. */

/** A timer set on a clock. */
export interface ClockTimer {
  cancel(): void;
  /** Whether the timer holds the process open (Node's ref/unref). */
  hold(held: boolean): void;
}

/**
 * Time as the client reads it and waits on it. `idle` marks a wait the client
 * takes only so that time passes (pacing to the server's limits, backoff
 * between attempts), as against a timer that bounds something else (the flush
 * interval, close()'s limit): a simulation may skip the first at once.
 */
export interface Clock {
  /** Epoch milliseconds. */
  now(): number;
  /** Calls `fn` once `ms` have passed on this clock. */
  schedule(fn: () => void, ms: number, idle: boolean): ClockTimer;
}

/** Node's own clock and timers. */
export const realClock: Clock = {
  now: () => Date.now(),
  schedule: (fn, ms) => {
    const t = setTimeout(fn, ms);
    return {
      cancel: () => clearTimeout(t),
      hold: (held) => void (held ? t.ref() : t.unref()),
    };
  },
};
