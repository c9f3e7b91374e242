import type { AuthRecord, ErasedPerson, ExpiryStep, IngestTx, PendingErasure, PersonLookup, PersonView, Store, StoredEvent } from '../port.js';
import { MemoryAdmin } from './admin.js';
import { MemoryAccounts } from './accounts.js';
import { MemoryEventPages, erase, expire, unsuppress } from './data-life.js';
import { MemoryDatabase, byteOrder, storedEvent } from './database.js';
import { MemoryListings } from './listings.js';
import { type MemoryFaults, MemoryTx, currentPerson } from './memory-tx.js';

/** Settings of the memory engine, for tests. */
export interface MemoryStoreOptions {
  /** The database to share with other stores, as servers share one; a fresh one when absent. */
  database?: MemoryDatabase;
  /** What the engine tells the domain: transactions one at a time, or at once (they still take turns here). */
  writers?: 'one' | 'many';
  faults?: MemoryFaults;
}

/**
 * The reference engine: the port implemented on plain maps, durable for as
 * long as the process lives. It passes the conformance suite like the others,
 * and lets the domain's tests run without a database.
 */
export class MemoryStore implements Store {
  readonly admin: MemoryAdmin;
  readonly accounts: MemoryAccounts;
  readonly listings: MemoryListings;
  readonly eventPages: MemoryEventPages;
  readonly database: MemoryDatabase;
  readonly writers: 'one' | 'many';
  readonly keyLookupLimitMs = Infinity;
  private readonly faults: MemoryFaults;

  constructor(opts: MemoryStoreOptions = {}) {
    this.database = opts.database ?? new MemoryDatabase();
    this.writers = opts.writers ?? 'one';
    this.faults = opts.faults ?? {};
    this.admin = new MemoryAdmin(this.database);
    this.accounts = new MemoryAccounts(this.database);
    this.listings = new MemoryListings(this.database);
    this.eventPages = new MemoryEventPages(this.database);
  }

  transaction<T>(fn: (tx: IngestTx) => Promise<T>, opts: { keep?: boolean } = {}): Promise<T> {
    const db = this.database;
    return db.exclusive(async () => {
      const tx = new MemoryTx(db.copy(), db, this.faults);
      const out = await fn(tx);
      if (opts.keep ?? true) db.tables = tx.tables;
      return out;
    });
  }

  async lookUpKeys(hashes: Buffer[]): Promise<Map<string, AuthRecord>> {
    const t = this.database.tables;
    const wanted = new Set(hashes.map((h) => h.toString('hex')));
    const out = new Map<string, AuthRecord>();
    for (const k of t.keys.values()) {
      const hex = k.hash.toString('hex');
      if (!wanted.has(hex)) continue;
      const source = t.sources.get(k.sourceId);
      const project = source && t.projects.get(source.projectId);
      const org = project && t.orgs.get(project.orgId);
      if (source?.deletedAt !== null || project?.deletedAt !== null || org?.deletedAt !== null) continue;
      const { deletedAt: _s, ...s } = source;
      const { deletedAt: _p, ...p } = project;
      out.set(hex, { keyId: k.id, hash: k.hash, expiresAt: k.expiresAt, revokedAt: k.revokedAt, source: s, project: p });
    }
    return out;
  }

  keysChangeMark(): string {
    return String(this.database.keysVersion);
  }

  recordKeyUses(uses: Map<string, number>): Promise<void> {
    return this.database.exclusive(() => {
      for (const [id, at] of uses) {
        const k = this.database.tables.keys.get(id);
        if (k !== undefined) k.lastUsedAt = Math.max(k.lastUsedAt ?? 0, at);
      }
    });
  }

  async listEvents(sourceId: string, limit: number): Promise<StoredEvent[]> {
    const t = this.database.tables;
    return t.events
      .filter((e) => e.sourceId === sourceId)
      .sort((a, b) => b.timestamp - a.timestamp || b.seq - a.seq)
      .slice(0, limit)
      .map((e) => storedEvent(t, e));
  }

  async findPerson(projectId: string, lookup: PersonLookup): Promise<PersonView | null> {
    const t = this.database.tables;
    const start = 'distinctId' in lookup ? t.links.get(projectId)?.get(lookup.distinctId) : lookup.personId;
    const ref = start === undefined ? undefined : currentPerson(t, projectId, start);
    if (ref === undefined) return null;
    const person = t.persons.get(projectId)!.get(ref.id)!;
    const distinctIds = [...(t.links.get(projectId) ?? [])].filter(([, p]) => p === ref.id).map(([d]) => d);
    const traits = [...(t.traits.get(projectId)?.get(ref.id) ?? [])].sort(([a], [b]) => byteOrder(a, b));
    return {
      id: ref.id,
      distinctIds: distinctIds.sort(byteOrder),
      traits: Object.fromEntries(traits.map(([k, v]) => [k, JSON.parse(v.value)])),
      createdAt: person.createdAt,
    };
  }

  async usage(projectId: string, month: string): Promise<number> {
    return this.database.tables.usage.get(projectId)?.get(month) ?? 0;
  }

  expireEvents(now: number, batch: number): Promise<ExpiryStep> {
    return expire(this.database, now, batch);
  }

  erasePerson(projectId: string, lookup: PersonLookup, opts: { suppress: boolean; now: number }): Promise<ErasedPerson | null> {
    return erase(this.database, projectId, lookup, opts);
  }

  unsuppress(projectId: string, lookup: PersonLookup): Promise<boolean> {
    return unsuppress(this.database, projectId, lookup);
  }

  /** An erasure here is one step, so none is ever left pending. */
  async staleErasures(): Promise<PendingErasure[]> {
    return [];
  }

  async finishErasure(e: PendingErasure): Promise<{ eventsDeleted: number; done: boolean }> {
    throw new Error(`the memory engine never leaves an erasure pending (asked to finish ${e.id})`);
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}
}
