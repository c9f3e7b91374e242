/**
 * Turns on the check threads for bodies whose key is still unknown: at most
 * `running` at once, the rest waiting first come first served, at most
 * `waiting` of them and `perOwner` of one client address. A body that finds
 * no place to wait is refused at once (null), so however many clients send
 * bodies without a key, they hold at most `running` threads' worth of work,
 * and their wait is bounded by the queue.
 */
export class KeylessGate {
  private running = 0;
  private readonly queue: { owner: string; go: () => void }[] = [];
  private readonly waitingBy = new Map<string, number>();

  constructor(
    private readonly maxRunning: number,
    private readonly maxWaiting: number,
    private readonly maxPerOwner: number,
  ) {}

  /** Resolves to a leave() once it is the body's turn; null when it may not wait. Call leave() exactly once. */
  enter(owner: string): Promise<() => void> | null {
    if (this.running < this.maxRunning && this.queue.length === 0) return Promise.resolve(this.start());
    const mine = this.waitingBy.get(owner) ?? 0;
    if (this.queue.length >= this.maxWaiting || mine >= this.maxPerOwner) return null;
    this.waitingBy.set(owner, mine + 1);
    return new Promise((resolve) => this.queue.push({ owner, go: () => resolve(this.start()) }));
  }

  /** Bodies on a thread and bodies waiting for one (for tests and metrics). */
  get counts(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.queue.length };
  }

  private start(): () => void {
    this.running++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.running--;
      this.next();
    };
  }

  private next(): void {
    const first = this.queue.shift();
    if (first === undefined) return;
    const n = this.waitingBy.get(first.owner)! - 1;
    if (n === 0) this.waitingBy.delete(first.owner);
    else this.waitingBy.set(first.owner, n);
    first.go();
  }
}
