import type { PersonRef } from '../port.js';
import type { Db } from './open.js';

/** Links remembered at most; the oldest go first past this. */
const LINK_CACHE_LIMIT = 50_000;

/**
 * Committed person links of one connection, by project and distinct_id, as
 * `findLinks` resolves them (merges followed). Looking links up was the
 * largest single cost of a big batch after writing its events: three B-tree
 * probes for each distinct_id of every commit, though a server sends for the
 * same users again and again.
 *
 * Only what is committed is remembered, so no rollback can leave a wrong
 * entry behind:
 * - reads made during a write are kept aside and taken in when its COMMIT
 *   returns, except for the distinct_ids the write linked itself;
 * - a distinct_id the write links is dropped from memory at COMMIT, and
 *   is not served from memory for the rest of the write;
 * - a merge re-points every link that resolved to the merged person, so
 *   those are not served from memory for the rest of the write, and are
 *   dropped at COMMIT (a scan of memory, once per write that merged);
 * - a commit by another connection (the admin command, another process)
 *   shows as a new `PRAGMA data_version`, and drops everything;
 * - so does a write that linked or merged and never committed.
 *
 * Contract: every write to persons and person_links on the connection goes
 * through SqliteIngestTx, between its begin() and commit().
 */
export class PersonLinkCache {
  constructor(private readonly limit = LINK_CACHE_LIMIT) {}

  private readonly entries = new Map<string, PersonRef>();
  private dataVersion = -1;
  private reads: [string, PersonRef][] = [];
  private readonly linked = new Set<string>();
  /** Persons merged away by the write, by project (keyOf). */
  private readonly mergedFrom = new Set<string>();

  /** At the start of every write, with the write lock held. */
  beginWrite(dataVersion: number): void {
    // The last write linked or merged and never reached committed(): its
    // COMMIT failed or something rolled it back, and what it left in the
    // file cannot be known for sure from here.
    if (dataVersion !== this.dataVersion || this.linked.size > 0 || this.mergedFrom.size > 0) {
      this.entries.clear();
      this.dataVersion = dataVersion;
    }
    this.reads = [];
    this.linked.clear();
    this.mergedFrom.clear();
  }

  /** Once COMMIT has returned: takes in the write's reads, drops what it changed. */
  committed(): void {
    for (const key of this.linked) this.entries.delete(key);
    if (this.mergedFrom.size > 0) {
      for (const [key, ref] of this.entries) if (this.mergedFrom.has(keyOf(projectOf(key), ref.id))) this.entries.delete(key);
    }
    for (const [key, ref] of this.reads) {
      if (!this.linked.has(key) && !this.mergedFrom.has(keyOf(projectOf(key), ref.id))) this.remember(key, ref);
    }
    this.reads = [];
    this.linked.clear();
    this.mergedFrom.clear();
  }

  get(projectId: string, distinctId: string): PersonRef | undefined {
    const key = keyOf(projectId, distinctId);
    if (this.linked.has(key)) return undefined;
    const ref = this.entries.get(key);
    return ref === undefined || this.mergedFrom.has(keyOf(projectId, ref.id)) ? undefined : ref;
  }

  /** A link read from the database during the write. */
  read(projectId: string, distinctId: string, ref: PersonRef): void {
    this.reads.push([keyOf(projectId, distinctId), ref]);
  }

  /** A link the write sets. */
  link(projectId: string, distinctId: string): void {
    this.linked.add(keyOf(projectId, distinctId));
  }

  /** A merge the write makes of person `from` into another. */
  merge(projectId: string, from: string): void {
    this.mergedFrom.add(keyOf(projectId, from));
  }

  private remember(key: string, ref: PersonRef): void {
    this.entries.delete(key);
    if (this.entries.size >= this.limit) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(key, Object.freeze({ id: ref.id, kind: ref.kind }));
  }
}

/** A distinct_id or person id within its project. */
function keyOf(projectId: string, id: string): string {
  return `${projectId}\u0000${id}`;
}

function projectOf(key: string): string {
  return key.slice(0, key.indexOf('\u0000'));
}

const caches = new WeakMap<Db, PersonLinkCache>();

/** The cache of a connection: every SqliteIngestTx on it shares one. */
export function personLinkCacheOf(db: Db): PersonLinkCache {
  let cache = caches.get(db);
  if (cache === undefined) caches.set(db, (cache = new PersonLinkCache()));
  return cache;
}
