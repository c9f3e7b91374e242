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
 *   dropped at COMMIT (found through an index by person, not a scan);
 * - a commit by another connection (the admin command, another process)
 *   shows as a new `PRAGMA data_version`, and drops everything;
 * - so does a write that linked or merged and never committed.
 *
 * Contract: every write to persons and person_links on the connection goes
 * through SqliteIngestTx, between its begin() and commit().
 */
export class PersonLinkCache {
  constructor(private readonly limit = LINK_CACHE_LIMIT) {}

  /** By link (keyOf project and distinct_id), oldest first: the person, and that person's key. */
  private readonly entries = new Map<string, Entry>();
  /**
   * The same entries by project, then distinct_id, for get(): a key joined
   * for every lookup was a new string to hash each time (255 against 70 ns a
   * lookup, and `get` 5% of the request thread's samples on `big`).
   */
  private readonly byProject = new Map<string, Map<string, Entry>>();
  /** The links in `entries` of each person (keyOf project and person id). */
  private readonly byPerson = new Map<string, Set<string>>();
  private dataVersion = -1;
  private reads: { key: string; projectId: string; distinctId: string; ref: PersonRef; person: string }[] = [];
  private readonly linked = new Set<string>();
  /** Persons merged away by the write (keyOf project and person id). */
  private readonly mergedFrom = new Set<string>();

  /** At the start of every write, with the write lock held. */
  beginWrite(dataVersion: number): void {
    // The last write linked or merged and never reached committed(): its
    // COMMIT failed or something rolled it back, and what it left in the
    // file cannot be known for sure from here.
    if (dataVersion !== this.dataVersion || this.linked.size > 0 || this.mergedFrom.size > 0) {
      this.entries.clear();
      this.byProject.clear();
      this.byPerson.clear();
      this.dataVersion = dataVersion;
    }
    this.reads = [];
    this.linked.clear();
    this.mergedFrom.clear();
  }

  /** Once COMMIT has returned: takes in the write's reads, drops what it changed. */
  committed(): void {
    for (const key of this.linked) this.forget(key);
    for (const person of this.mergedFrom) for (const key of [...(this.byPerson.get(person) ?? [])]) this.forget(key);
    for (const r of this.reads) if (!this.linked.has(r.key) && !this.mergedFrom.has(r.person)) this.remember(r);
    this.reads = [];
    this.linked.clear();
    this.mergedFrom.clear();
  }

  /** Forgets every link, as another connection's commit makes it do. */
  clear(): void {
    this.entries.clear();
    this.byProject.clear();
    this.byPerson.clear();
    this.reads = [];
  }

  get(projectId: string, distinctId: string): PersonRef | undefined {
    // Most writes link and merge nothing: then no key is joined at all.
    if (this.linked.size > 0 && this.linked.has(keyOf(projectId, distinctId))) return undefined;
    const entry = this.byProject.get(projectId)?.get(distinctId);
    return entry === undefined || (this.mergedFrom.size > 0 && this.mergedFrom.has(entry.person)) ? undefined : entry.ref;
  }

  /** Links held, and persons and projects indexed (tests check all stay bounded). */
  get size(): { links: number; persons: number; projects: number } {
    return { links: this.entries.size, persons: this.byPerson.size, projects: this.byProject.size };
  }

  /** A link read from the database during the write. */
  read(projectId: string, distinctId: string, ref: PersonRef): void {
    this.reads.push({ key: keyOf(projectId, distinctId), projectId, distinctId, ref, person: keyOf(projectId, ref.id) });
  }

  /** A link the write sets. */
  link(projectId: string, distinctId: string): void {
    this.linked.add(keyOf(projectId, distinctId));
  }

  /** A merge the write makes of person `from` into another. */
  merge(projectId: string, from: string): void {
    this.mergedFrom.add(keyOf(projectId, from));
  }

  private remember(r: { key: string; projectId: string; distinctId: string; ref: PersonRef; person: string }): void {
    const { key, projectId, distinctId, person } = r;
    this.forget(key);
    if (this.entries.size >= this.limit) this.forget(this.entries.keys().next().value!);
    const entry: Entry = { ref: Object.freeze({ id: r.ref.id, kind: r.ref.kind }), person, projectId, distinctId };
    this.entries.set(key, entry);
    let project = this.byProject.get(projectId);
    if (project === undefined) this.byProject.set(projectId, (project = new Map()));
    project.set(distinctId, entry);
    let links = this.byPerson.get(person);
    if (links === undefined) this.byPerson.set(person, (links = new Set()));
    links.add(key);
  }

  private forget(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    const project = this.byProject.get(entry.projectId)!;
    project.delete(entry.distinctId);
    if (project.size === 0) this.byProject.delete(entry.projectId);
    const links = this.byPerson.get(entry.person)!;
    links.delete(key);
    if (links.size === 0) this.byPerson.delete(entry.person);
  }
}

/** A link held: the person it resolves to, that person's key (keyOf), and the link's project and distinct_id. */
interface Entry {
  ref: PersonRef;
  person: string;
  projectId: string;
  distinctId: string;
}

/** A distinct_id or person id within its project. */
function keyOf(projectId: string, id: string): string {
  return `${projectId}\u0000${id}`;
}

const caches = new WeakMap<Db, PersonLinkCache>();

/** The cache of a connection: every SqliteIngestTx on it shares one. */
export function personLinkCacheOf(db: Db): PersonLinkCache {
  let cache = caches.get(db);
  if (cache === undefined) caches.set(db, (cache = new PersonLinkCache()));
  return cache;
}
