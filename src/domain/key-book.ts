import { type AuthRecord, type KeyStore, StoreUnavailableError } from '../stores/port.js';
import { KeyLookups } from './key-lookups.js';

/** Keys remembered at most; the cache starts over past this. */
const CACHE_LIMIT = 10_000;

/**
 * Finds the key a request came with. Lookups asked while one is in flight
 * share the next statement (key-lookups.ts). Found keys are remembered while
 * the store's change mark stands still (for SQLite, until anyone commits a
 * change to keys or their owners), so a revocation, an expiry change or a
 * deletion still counts from the very next request on every server. A store
 * without a cheap mark (PostgreSQL) is asked every time.
 */
export class KeyBook {
  private readonly lookups: KeyLookups<AuthRecord>;
  private cache = new Map<string, AuthRecord>();
  private mark: string | null = null;

  constructor(private readonly store: KeyStore) {
    this.lookups = new KeyLookups(
      (hexes) => store.lookUpKeys(hexes.map((h) => Buffer.from(h, 'hex'))),
      store.keyLookupLimitMs,
    );
  }

  /** The key with this hash, with its source and project, or null. */
  async find(hash: Buffer): Promise<AuthRecord | null> {
    const hex = hash.toString('hex');
    // Read before the lookup: what the lookup returns is at least this fresh.
    const mark = this.store.keysChangeMark();
    if (mark !== null) {
      if (mark !== this.mark) {
        this.cache.clear();
        this.mark = mark;
      }
      const hit = this.cache.get(hex);
      if (hit !== undefined) return hit;
    }
    let found: AuthRecord | undefined;
    try {
      found = await this.lookups.get(hex);
    } catch (e) {
      if (e instanceof StoreUnavailableError) throw e;
      throw new StoreUnavailableError('The key lookup got no answer in time.', { cause: e });
    }
    // Unknown keys are not remembered: guessing must not grow the cache. A
    // mark that moved while the lookup ran leaves the answer unremembered.
    if (found !== undefined && mark !== null && mark === this.mark) {
      if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
      this.cache.set(hex, found);
    }
    return found ?? null;
  }
}
