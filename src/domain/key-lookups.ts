/** Distinct keys one lookup statement takes at most; the rest go in the next. */
const MAX_KEYS_PER_LOOKUP = 256;

interface Waiter<V> {
  resolve: (v: V | undefined) => void;
  reject: (e: unknown) => void;
  timer: NodeJS.Timeout | undefined;
}

/** A lookup that got no answer within its time limit; the store answers 503. */
export class KeyLookupTimeout extends Error {}

/**
 * Lookups by key where those asked for while one is in flight go together in
 * the next statement, as group commit does for writes: a burst of requests
 * costs a statement per round trip instead of one per request, and a key
 * many of them share is probed once in each. At low load nothing waits: a
 * lookup with none in flight starts at once.
 *
 * Freshness is that of a lookup per request: a request never takes the answer
 * of a statement sent before it asked, only of the next one, so a change
 * committed before it asked (a revoked key) is always seen.
 */
export class KeyLookups<V> {
  /** Asked for since the statement in flight was sent, by key. */
  private next = new Map<string, Set<Waiter<V>>>();
  private inFlight = false;

  constructor(
    /** Looks the keys up in one statement; keys without an answer are missing from the map. */
    private readonly lookUp: (keys: string[]) => Promise<Map<string, V>>,
    /**
     * How long one lookup may take from when it was asked, waiting for the
     * statement in flight included. Without it, a request queued behind a
     * statement that hangs would wait for two statements' time limits.
     */
    private readonly maxWaitMs = Infinity,
  ) {}

  get(key: string): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      const w: Waiter<V> = { resolve, reject, timer: undefined };
      if (Number.isFinite(this.maxWaitMs)) w.timer = setTimeout(() => this.expire(key, w), this.maxWaitMs);
      const waiters = this.next.get(key);
      if (waiters !== undefined) waiters.add(w);
      else this.next.set(key, new Set([w]));
      if (!this.inFlight) void this.send();
    });
  }

  private async send(): Promise<void> {
    this.inFlight = true;
    while (this.next.size > 0) {
      const batch = new Map<string, Set<Waiter<V>>>();
      for (const [key, waiters] of this.next) {
        if (batch.size === MAX_KEYS_PER_LOOKUP) break;
        batch.set(key, waiters);
        this.next.delete(key);
      }
      try {
        const found = await this.lookUp([...batch.keys()]);
        for (const [key, waiters] of batch) for (const w of waiters) settle(w, () => w.resolve(found.get(key)));
      } catch (e) {
        for (const waiters of batch.values()) for (const w of waiters) settle(w, () => w.reject(e));
      }
    }
    this.inFlight = false;
  }

  /** Gives up on a lookup; one not sent yet leaves the queue, so an outage cannot pile them up. */
  private expire(key: string, w: Waiter<V>): void {
    const waiters = this.next.get(key);
    if (waiters?.delete(w) && waiters.size === 0) this.next.delete(key);
    w.reject(new KeyLookupTimeout(`The key lookup got no answer within ${this.maxWaitMs} ms.`));
  }
}

function settle<V>(w: Waiter<V>, fn: () => void): void {
  clearTimeout(w.timer);
  fn();
}
