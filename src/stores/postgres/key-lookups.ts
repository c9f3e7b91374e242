/** Distinct keys one lookup statement takes at most; the rest go in the next. */
const MAX_KEYS_PER_LOOKUP = 256;

interface Waiter<V> {
  resolve: (v: V | undefined) => void;
  reject: (e: unknown) => void;
}

/**
 * Lookups by key where those asked for while one is in flight go together in
 * the next statement, as group commit does for writes: a burst of requests
 * with the same key costs one round trip and one index probe, not one each.
 * At low load nothing waits: a lookup with none in flight starts at once.
 *
 * Freshness is that of a lookup per request: a request never takes the answer
 * of a statement sent before it asked, only of the next one, so a change
 * committed before it asked (a revoked key) is always seen.
 */
export class KeyLookups<V> {
  /** Asked for since the statement in flight was sent, by key. */
  private next = new Map<string, Waiter<V>[]>();
  private inFlight = false;

  constructor(
    /** Looks the keys up in one statement; keys without an answer are missing from the map. */
    private readonly lookUp: (keys: string[]) => Promise<Map<string, V>>,
  ) {}

  get(key: string): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      const waiters = this.next.get(key);
      if (waiters !== undefined) waiters.push({ resolve, reject });
      else this.next.set(key, [{ resolve, reject }]);
      if (!this.inFlight) void this.send();
    });
  }

  private async send(): Promise<void> {
    this.inFlight = true;
    while (this.next.size > 0) {
      const batch = new Map<string, Waiter<V>[]>();
      for (const [key, waiters] of this.next) {
        if (batch.size === MAX_KEYS_PER_LOOKUP) break;
        batch.set(key, waiters);
        this.next.delete(key);
      }
      try {
        const found = await this.lookUp([...batch.keys()]);
        for (const [key, waiters] of batch) for (const w of waiters) w.resolve(found.get(key));
      } catch (e) {
        for (const waiters of batch.values()) for (const w of waiters) w.reject(e);
      }
    }
    this.inFlight = false;
  }
}
