/**
 * Bodies being parsed, checked or waiting for their commit, counted in bytes
 * of JSON. A parsed batch takes ten times or more its JSON in memory and
 * waits for a commit that takes about 1,000 items at a time, so past a few
 * commits' worth, admitting more only adds memory, garbage collection and
 * latency. 2 MiB is about twenty 500-item batches, or thousands of small
 * requests (group commit needs those).
 */
export const BODY_BUDGET_BYTES = 2 * 1_048_576;

/** How long a request may wait for room before it is answered 503. */
export const ADMISSION_WAIT_MS = 10_000;

/**
 * Bodies that may wait for room, in budgets: waiting bodies are memory too,
 * so past this a request is answered 503 at once instead of joining the
 * queue (16 MiB with the default budget, about 150 batches of 500 items).
 */
export const WAITING_BUDGETS = 8;

/**
 * The part of the waiting room one project (all its keys) may fill: a quarter,
 * so a project that floods a slow store cannot get every other one turned away at once.
 */
export const WAITING_KEY_SHARE = 0.25;

/**
 * Back-pressure between reading a body and parsing it: a request waits,
 * first come first served, until the bodies already admitted leave room for
 * its own (its JSON, decompressed). Meanwhile it holds only its body's bytes,
 * at most 1 MiB, so a burst past what the store can commit costs those bytes
 * each, not a parsed batch each. Weighing bodies once read makes the weight exact (no
 * guess for gzip or chunked bodies), and a client that sends slowly holds no
 * room while it does. A request that waits longer than `maxWaitMs` is told to
 * come back (503), and so is one that finds WAITING_BUDGETS budgets' worth of
 * bodies already waiting. One body larger than the whole budget is admitted
 * when nothing else is in.
 */
export class Admission {
  private inFlight = 0;
  private readonly waiting: { weight: number; admit: () => void }[] = [];
  private waitingBytes = 0;
  private readonly waitingByKey = new Map<string, number>();

  constructor(
    private readonly budget = BODY_BUDGET_BYTES,
    private readonly maxWaitMs = ADMISSION_WAIT_MS,
    private readonly maxWaitingBytes = WAITING_BUDGETS * budget,
    private readonly maxKeyWaitingBytes = WAITING_KEY_SHARE * maxWaitingBytes,
  ) {}

  /**
   * Resolves to a release function once admitted, or null when it may not
   * wait or waited too long. With a `key` (whose share: a project, or a client
   * address), its bodies already waiting count against its share of the waiting
   * room (one body alone may always wait).
   */
  async enter(weight: number, key?: string): Promise<(() => void) | null> {
    if (this.waiting.length === 0 && this.fits(weight)) return this.admit(weight);
    if (this.waiting.length > 0 && this.waitingBytes + weight > this.maxWaitingBytes) return null;
    const keyWaiting = key === undefined ? 0 : (this.waitingByKey.get(key) ?? 0);
    if (keyWaiting > 0 && keyWaiting + weight > this.maxKeyWaitingBytes) return null;
    return new Promise((resolve) => {
      const leave = (): void => {
        this.waitingBytes -= weight;
        if (key !== undefined) this.addKeyWaiting(key, -weight);
      };
      const entry = {
        weight,
        admit: () => {
          clearTimeout(timer);
          leave();
          resolve(this.admit(weight));
        },
      };
      const timer = setTimeout(() => {
        const at = this.waiting.indexOf(entry);
        if (at === -1) return;
        this.waiting.splice(at, 1);
        leave();
        resolve(null);
        // The one given up on may have held back smaller ones behind it.
        this.admitWaiting();
      }, this.maxWaitMs);
      this.waiting.push(entry);
      this.waitingBytes += weight;
      if (key !== undefined) this.addKeyWaiting(key, weight);
    });
  }

  /** Bytes admitted and not yet released (for tests and logs). */
  get admittedBytes(): number {
    return this.inFlight;
  }

  /** Bytes of the bodies waiting for room (for tests and logs). */
  get waitingBodyBytes(): number {
    return this.waitingBytes;
  }

  private addKeyWaiting(key: string, bytes: number): void {
    const left = (this.waitingByKey.get(key) ?? 0) + bytes;
    if (left === 0) this.waitingByKey.delete(key);
    else this.waitingByKey.set(key, left);
  }

  private fits(weight: number): boolean {
    return this.inFlight === 0 || this.inFlight + weight <= this.budget;
  }

  private admit(weight: number): () => void {
    this.inFlight += weight;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight -= weight;
      this.admitWaiting();
    };
  }

  private admitWaiting(): void {
    while (this.waiting.length > 0 && this.fits(this.waiting[0]!.weight)) this.waiting.shift()!.admit();
  }
}
