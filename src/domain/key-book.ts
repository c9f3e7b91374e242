import { type AuthRecord, type Store, StoreUnavailableError } from '../stores/port.js';
import { KeyLookups } from './key-lookups.js';

/**
 * Finds the key a request came with. Lookups asked while one is in flight
 * share the next statement (key-lookups.ts). The store answers as fresh as a
 * read of the database at the time of the call; an engine with a cheap
 * signal that keys have not changed (SQLite) answers from memory.
 */
export class KeyBook {
  private readonly lookups: KeyLookups<AuthRecord>;

  constructor(store: Pick<Store, 'lookUpKeys' | 'keyLookupLimitMs'>) {
    this.lookups = new KeyLookups(
      (hexes) => store.lookUpKeys(hexes.map((h) => Buffer.from(h, 'hex'))),
      store.keyLookupLimitMs,
    );
  }

  /** The key with this hash, with its source and project, or null. */
  async find(hash: Buffer): Promise<AuthRecord | null> {
    let found: AuthRecord | undefined;
    try {
      found = await this.lookups.get(hash.toString('hex'));
    } catch (e) {
      if (e instanceof StoreUnavailableError) throw e;
      throw new StoreUnavailableError('The key lookup got no answer in time.', { cause: e });
    }
    return found ?? null;
  }
}
