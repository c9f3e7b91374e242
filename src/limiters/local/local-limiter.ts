import type { LimitResult, Limiter, WindowSpec, WindowUse } from '../port.js';

/**
 * An exact sliding log kept in this process: each admitted request is one
 * entry (time, cost), and a running sum makes every check amortised O(1).
 */
class SlidingLog {
  constructor(readonly windowMs: number) {}
  private times: number[] = [];
  private costs: number[] = [];
  private head = 0;
  sum = 0;

  evict(before: number): void {
    while (this.head < this.times.length && this.times[this.head]! <= before) {
      this.sum -= this.costs[this.head]!;
      this.head++;
    }
    // Compact once the dead prefix dominates, so memory follows the live window.
    if (this.head > 1024 && this.head * 2 > this.times.length) {
      this.times = this.times.slice(this.head);
      this.costs = this.costs.slice(this.head);
      this.head = 0;
    }
  }

  add(at: number, cost: number): void {
    this.times.push(at);
    this.costs.push(cost);
    this.sum += cost;
  }

  oldest(): number | null {
    return this.head < this.times.length ? this.times[this.head]! : null;
  }

  get empty(): boolean {
    return this.head >= this.times.length;
  }
}

/** Counts limits inside this process: right for one server, or as the fallback when Redis is away. */
export class LocalLimiter implements Limiter {
  private readonly logs = new Map<string, SlidingLog>();
  private sweeps = 0;

  async take(windows: WindowSpec[], cost: number, now: number): Promise<LimitResult> {
    return this.takeNow(windows, cost, now);
  }

  /** The same as take, without a promise: for callers that need it in the same tick. */
  takeNow(windows: WindowSpec[], cost: number, now: number): LimitResult {
    const logs = windows.map((w) => {
      let log = this.logs.get(w.key);
      if (log === undefined) this.logs.set(w.key, (log = new SlidingLog(w.windowMs)));
      log.evict(now - w.windowMs);
      return log;
    });
    const allowed = windows.every((w, i) => logs[i]!.sum + cost <= w.limit);
    if (allowed) for (const log of logs) log.add(now, cost);
    const uses: WindowUse[] = windows.map((w, i) => {
      const oldest = logs[i]!.oldest();
      return { used: logs[i]!.sum, oldestExpiresAt: oldest === null ? null : oldest + w.windowMs };
    });
    if (++this.sweeps % 10_000 === 0) this.sweep(now);
    return { allowed, windows: uses };
  }

  async close(): Promise<void> {
    this.logs.clear();
  }

  /** Forgets counters that have emptied, so idle projects and keys cost nothing. */
  private sweep(now: number): void {
    for (const [key, log] of this.logs) {
      log.evict(now - log.windowMs);
      if (log.empty) this.logs.delete(key);
    }
  }
}
