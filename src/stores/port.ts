/**
 * The store port: everything Inlet asks of a database. Each engine is one
 * folder under stores/ implementing `Store`, and every engine passes the same
 * conformance suite (test/conformance). The ingest engine (domain/ingest),
 * key caching and lookup batching (domain/key-book.ts) and key-use batching
 * (domain/key-uses.ts) live in the domain, once, and reach a database only
 * through this file; an adapter imports this file and its driver, nothing
 * above, and holds no rule of Inlet's that differs by engine: what is off the
 * ingest path is written once for both SQL engines in stores/sql (an
 * erasure's rules with it, see ErasureStore), and what expires is the
 * domain's plan (RetentionStore).
 *
 * The contract, for every engine:
 *
 * Transactions (`transaction`). `fn` runs on one IngestTx between BEGIN and
 * COMMIT (or ROLLBACK when `keep` is false, as a dry run is); everything it
 * writes is kept all together or not at all. COMMIT resolves only once the
 * writes are durable: on disk (SQLite, synchronous=FULL) or acknowledged by
 * the server (PostgreSQL). If `fn` throws, or COMMIT fails, nothing of the
 * transaction is kept and the promise rejects. A store whose `writers` is
 * 'one' runs its transactions one after the other (it queues them itself);
 * 'many' runs them at once, and writers of one project take turns only
 * through `lockProject`.
 *
 * What a transaction may do: the IngestTx operations, each at most one round
 * trip whatever the size of its lists. A store may hold writes back and send
 * them with the next read, the next savepoint, or before COMMIT (PostgreSQL
 * does): a write's failure can then surface at one of those instead, always
 * before the transaction commits, and reads in the same transaction always
 * see the writes held back. `fn` must not start another transaction on the
 * same store and wait for it (on a 'one' store it would wait for itself).
 *
 * The project lock (`lockProject`). From the call until the transaction ends,
 * no other transaction, on any server of the same database, holds the lock of
 * that project: the meter, the plan limit, insert_ids, person links and the
 * key check are then decided on data no other writer is changing. Admin
 * changes that take a key out of service (revocation, deleting its source,
 * project or organization) wait for the lock of the projects they touch, so a
 * write that checked its key under the lock commits before the change, or
 * sees it.
 *
 * Errors. A database failure rejects with StoreUnavailableError: `refused`
 * says the store answered and refused what was written (a constraint, a value
 * it cannot keep), so the same writes fail again while others may pass;
 * otherwise the store could not be reached, timed out, or the transaction as a
 * whole failed. Any other error is a bug and propagates as it is.
 *
 * Keys. `lookUpKeys` reads keys by hash from the database at the time of the
 * call. `keysChangeMark` is a cheap freshness signal: a value that changes
 * whenever anything `lookUpKeys` reads may have changed, on this server or
 * another; null means the store has no cheap signal, and lookups are then
 * never cached. (PostgreSQL has none: asking the server whether anything
 * changed costs the same round trip as the lookup itself.)
 *
 * Admin and read queries sit in interfaces of their own (AdminStore,
 * ReadStore, EventPages): a new query is a method there, written once for
 * both engines in src/stores/sql/ (an engine gives only what it must do its
 * own way, see docs/design.md, "One data layer"). Each
 * admin write is durable when it resolves, and never lands inside a running
 * transaction (a 'one' store queues it with them). Reads see committed data.
 * The console's accounts and lists (AccountStore, ListingStore, in
 * port-console.ts) keep the same rules.
 */
import type { AccountStore, ListingStore } from './port-console.js';
import type { DestinationStore } from './port-destinations.js';

/** A value now, or later: an engine whose calls are synchronous (SQLite) returns it at once. */
export type Awaitable<T> = T | Promise<T>;

// ---- entities -------------------------------------------------------------

export interface Org {
  id: string;
  name: string;
  createdAt: number;
}

export interface Project {
  id: string;
  orgId: string;
  name: string;
  apiEnabled: boolean;
  monthlyEventLimit: number | null;
  /** Days raw events are kept, by their timestamp (400 unless set). */
  retentionDays: number;
  createdAt: number;
}

export interface Source {
  id: string;
  projectId: string;
  name: string;
  filterBots: boolean;
  recordIp: boolean;
  createdAt: number;
}

/** A key as stored: never the key itself, only its hash and what may be shown. */
export interface KeyRecord {
  id: string;
  sourceId: string;
  hash: Buffer;
  lastFour: string;
  createdAt: number;
  lastUsedAt: number | null;
  expiresAt: number | null;
  revokedAt: number | null;
}

/** What a request needs to know about the key it came with. */
export interface AuthRecord {
  keyId: string;
  hash: Buffer;
  expiresAt: number | null;
  revokedAt: number | null;
  source: Source;
  project: Project;
}

// ---- reads ------------------------------------------------------------------

export interface StoredEvent {
  id: string;
  event: string;
  distinctId: string | null;
  anonymousId: string | null;
  /** The person the event belongs to now, merges included. */
  personId: string;
  sessionId: string | null;
  timestamp: number;
  receivedAt: number;
  insertId: string | null;
  properties: Record<string, unknown>;
}

export interface PersonView {
  id: string;
  distinctIds: string[];
  traits: Record<string, unknown>;
  createdAt: number;
}

export type PersonLookup = { distinctId: string } | { personId: string };

/** Ids found suppressed, by kind: a distinct_id and a person id of the same spelling are different ids. */
export interface SuppressedIds {
  distinctIds: Set<string>;
  personIds: Set<string>;
}

// ---- the transaction the domain's algorithms run in ------------------------

export type PersonKind = 'browser' | 'server';

export interface PersonRef {
  /** The person now (after following a merge). */
  id: string;
  kind: PersonKind;
}

/** An event as the ingest pass writes it. */
export interface NewEventRow {
  id: string;
  projectId: string;
  sourceId: string;
  event: string;
  distinctId: string | null;
  anonymousId: string | null;
  personId: string;
  sessionId: string | null;
  timestamp: number;
  receivedAt: number;
  insertId: string | null;
  /** Properties and enrichment, as JSON text. */
  properties: string;
}

/** One trait to set on a person. */
export interface TraitWrite {
  personId: string;
  key: string;
  /** JSON text of the value. */
  value: string;
  /** Item timestamp: newest wins per key; on a tie the later write wins. */
  setAt: number;
}

/** What a write needs to know about a key, read under the project lock. */
export interface KeyState {
  revokedAt: number | null;
  expiresAt: number | null;
  /** False once its source, project or organization is deleted. */
  ownersLive: boolean;
}

/**
 * The bulk operations the ingest and people algorithms (domain/) run inside
 * one transaction; see the contract at the top of this file.
 */
export interface IngestTx {
  /** Takes the project's lock until the transaction ends (see the contract). */
  lockProject(projectId: string): Awaitable<void>;
  /** Keys by id as they are now; keys that do not exist are missing from the map. */
  keyStates(keyIds: string[]): Awaitable<Map<string, KeyState>>;
  monthlyEventLimit(projectId: string): Awaitable<number | null>;
  usage(projectId: string, month: string): Awaitable<number>;
  addUsage(projectId: string, month: string, events: number): Awaitable<void>;
  /** insert_id → event id (null for an identify) of those already stored. */
  findInsertIds(sourceId: string, insertIds: string[]): Awaitable<Map<string, string | null>>;
  /**
   * Records insert_ids as stored, after insertEvents has inserted the events
   * they name. A conflict must fail the transaction (it cannot happen under
   * lockProject): here, or when the write is sent.
   */
  addInsertIds(sourceId: string, rows: { insertId: string; eventId: string | null }[]): Awaitable<void>;
  /** distinct_id → the person it is linked to now. */
  findLinks(projectId: string, distinctIds: string[]): Awaitable<Map<string, PersonRef>>;
  /** person id → the person it is now. */
  findPersons(projectId: string, personIds: string[]): Awaitable<Map<string, PersonRef>>;
  createPersons(projectId: string, persons: { id: string; kind: PersonKind }[], createdAt: number): Awaitable<void>;
  /**
   * Links distinct_ids that have no link yet (as read under lockProject) to a
   * person. One already linked must fail the transaction, here or when the
   * write is sent: a link changes only by mergePerson.
   */
  addLinks(projectId: string, links: { distinctId: string; personId: string }[]): Awaitable<void>;
  /** Folds `from` into `into`: ids, traits (newest per key) and, on read, events. */
  mergePerson(projectId: string, from: string, into: string): Awaitable<void>;
  upsertTraits(projectId: string, traits: TraitWrite[]): Awaitable<void>;
  /** Rows whose `event` is null are refused (StoreUnavailableError, refused), as a NOT NULL column does. */
  insertEvents(rows: NewEventRow[]): Awaitable<void>;
  /**
   * Those of the distinct_ids, and of the person ids (an item's anonymous_id),
   * whose items are dropped: their person was erased with suppression. One
   * lookup for both lists.
   */
  findSuppressed(projectId: string, distinctIds: string[], personIds: string[]): Awaitable<SuppressedIds>;
  /**
   * Runs `fn`; if it throws, every write made since the call is undone and
   * the error rethrown, and the transaction goes on as if `fn` never ran.
   */
  savepoint<T>(fn: () => Promise<T>): Promise<T>;
}

// ---- reading events in pages (export, paging) -------------------------------

declare const eventCursor: unique symbol;

/**
 * A position in a source's events, which are ordered by timestamp, then by
 * an order of the engine's own. Opaque: only the store that gave it reads it
 * (from eventPage's `next` or from eventCursor); the caller only hands it back.
 */
export type EventCursor = string & { readonly [eventCursor]: true };

/** One page asked of a source's events: its direction, where it starts, its bounds and filters. */
export interface EventPageQuery {
  sourceId: string;
  /** 'asc': oldest first (export); 'desc': newest first (events list). */
  order: 'asc' | 'desc';
  /** The page starts just past this position, in `order`; null: at the start. */
  after: EventCursor | null;
  /** Epoch ms: only events with a timestamp at or after this. */
  since?: number;
  /** Epoch ms: only events with a timestamp before this. */
  until?: number;
  /** Only events of this name. */
  event?: string;
  /** Only events with this distinct_id. */
  distinctId?: string;
  limit: number;
}

/** A page of events, in the order asked, with where the next one starts. */
export interface EventPage {
  events: StoredEvent[];
  /** Where the next page starts; null once nothing is left. */
  next: EventCursor | null;
}

/**
 * Pages through a source's events by keyset, so reading any number of them
 * costs constant memory, and a page costs about what its events do.
 */
export interface EventPages {
  eventPage(q: EventPageQuery): Promise<EventPage>;
  /** Where an event of the source stands (for paging before it); null when the source has no such event. The id is a UUID, read in either case. */
  eventCursor(sourceId: string, eventId: string): Promise<EventCursor | null>;
  /** Every source of the project, deleted ones included (their events are the project's). */
  sourceIdsOf(projectId: string): Promise<string[]>;
}

// ---- retention -----------------------------------------------------------------

/** A project's retention, as the domain reads it to plan a step (domain/retention.ts). */
export interface ProjectRetention {
  projectId: string;
  retentionDays: number;
}

/** What a retention step deletes: the domain decides it, an engine only deletes. */
export interface ExpiryPlan {
  /** Each project's events with a timestamp below `before` have expired. */
  cutoffs: { projectId: string; before: number }[];
  /** Every project's events below this have expired: an engine that keeps a table per day drops a day that has ended by then. */
  allBefore: number;
}

/** What one retention step removed. */
export interface ExpiryStep {
  /** Events deleted row by row. */
  deleted: number;
  /** Whole day tables dropped (engines that keep one per day). */
  dropped: number;
  /** Whether expired events may be left: call again. */
  more: boolean;
}

/**
 * Deletes events older than their project's retention, as the domain's plan
 * says (the cutoffs are its rule). A step is short (one small transaction,
 * or one day table) so that writers never wait long; the caller repeats
 * steps until none is left. Deleted projects' events expire too.
 */
export interface RetentionStore {
  /** Every project's retention, deleted projects included (written once, stores/sql/retention.ts). */
  projectRetentions(): Promise<ProjectRetention[]>;
  /** One step: SQLite deletes rows a batch per transaction; PostgreSQL drops a day table or deletes a batch of rows. */
  expireEvents(plan: ExpiryPlan, batch: number): Promise<ExpiryStep>;
}

// ---- erasure -------------------------------------------------------------------

/** An erasure whose events are not all deleted yet. */
export interface PendingErasure {
  id: number;
  projectId: string;
  /** The person and every person merged into it: events carry the person they were stored for. */
  personIds: string[];
  /** The newest event stored when the person was forgotten: no later event is the person's. */
  throughSeq: number;
}

/** What erasing a person removed. */
export interface ErasedPerson {
  personId: string;
  /**
   * The distinct_ids that were linked to the person. With suppression they
   * are now suppressed, and so are the person's id and those of the persons
   * merged into it (an item may name them as its anonymous_id).
   */
  distinctIds: string[];
  eventsDeleted: number;
  suppressed: boolean;
}

/**
 * Erasing a person, on request: its links, traits, the persons merged into
 * it, and every event of any of them in every source of the project.
 *
 * Contract, for every engine: the links and persons go first, in one
 * transaction under the project lock ingestion takes, which also records
 * the suppression when asked; the events stored until then are deleted
 * after, in short steps. An item for the person that arrives meanwhile is
 * therefore either stored before that transaction (and deleted with the
 * rest) or ingested after it: dropped as `suppressed`, or given a new person.
 *
 * That first transaction also records the erasure as pending: the persons
 * whose events go, and the newest event stored until then. Each step of
 * deletion marks the record as touched at its time, and the record goes once
 * every event is deleted. A process that stops in between (a crash, a lost
 * database) leaves the record, and `finishErasure` deletes the rest: nothing
 * of the person can be left behind for good, though its persons and links
 * are gone and it can no longer be looked up.
 *
 * These rules are written once for both engines (stores/sql/erasure.ts, with
 * the bookkeeping queries); an engine gives only its transactions, its
 * clock, the newest seq, and the deletion of events in short steps.
 */
export interface ErasureStore {
  /** Null when the project has no such person. */
  erasePerson(projectId: string, lookup: PersonLookup, opts: { suppress: boolean; now: number }): Promise<ErasedPerson | null>;
  /**
   * Pending erasures no step has touched for `idleMs` or more (a running
   * erasure touches its record at every step). Times are the store's own
   * clock: the database server's where processes on several machines share
   * one, so that their clocks need not agree.
   */
  staleErasures(idleMs: number): Promise<PendingErasure[]>;
  /**
   * Step two of an erasure: deletes its events in short steps, touching its
   * record at each, then drops the record. Once `stopping()` is true no
   * further step starts, and the record stays pending (`done` is false).
   */
  finishErasure(e: PendingErasure, opts?: { stopping?: () => boolean }): Promise<{ eventsDeleted: number; done: boolean }>;
  /**
   * Lets items for the id be stored again; false when it was not suppressed.
   * A distinct_id takes the person ids erased with it along (its person may
   * come back whole, browser key and all); the other distinct_ids of that
   * erasure stay suppressed. A person id lifts the person ids of its erasure
   * (the person and those merged into it) and no distinct_id.
   */
  unsuppress(projectId: string, lookup: PersonLookup): Promise<boolean>;
}

// ---- backups -----------------------------------------------------------------

/**
 * A consistent copy of the whole store in one new file, taken while servers
 * keep writing. Only an engine that is one file has it; a database server
 * has its own tools (pg_dump).
 */
export interface FileBackups {
  /** Writes the copy to `toFile`, which must not exist yet; returns its size in bytes. */
  backup(toFile: string): Promise<number>;
}

// ---- the store ----------------------------------------------------------------

/** Organizations, projects, sources and keys; deletion is a mark, so history stays readable. */
export interface AdminStore {
  createOrg(org: Org): Promise<void>;
  getOrg(id: string): Promise<Org | null>;
  /** The organization named "default", made on first use. */
  defaultOrg(make: () => Org): Promise<Org>;
  /** Waits for the lock of each of its projects (see the contract). */
  deleteOrg(id: string, at: number): Promise<boolean>;
  createProject(project: Project): Promise<void>;
  getProject(id: string): Promise<Project | null>;
  updateProject(id: string, patch: Partial<Pick<Project, 'apiEnabled' | 'monthlyEventLimit' | 'retentionDays'>>): Promise<Project | null>;
  /** Waits for the project's lock (see the contract). */
  deleteProject(id: string, at: number): Promise<boolean>;
  createSource(source: Source): Promise<void>;
  getSource(id: string): Promise<Source | null>;
  updateSource(id: string, patch: Partial<Pick<Source, 'filterBots' | 'recordIp'>>): Promise<Source | null>;
  /** Waits for its project's lock (see the contract). */
  deleteSource(id: string, at: number): Promise<boolean>;
  /**
   * Adds a key if `fits` says the source's keys (read in the same
   * transaction) leave room for it; `replaces` sets another key of the source
   * to expire. Read, decided and written in one transaction, so keys added at
   * once on two servers are decided one after the other.
   */
  addKey(
    key: KeyRecord,
    opts: { fits: (keysOfSource: KeyRecord[]) => boolean; replaces?: { keyId: string; expiresAt: number } },
  ): Promise<'ok' | 'too_many_keys'>;
  getKey(id: string): Promise<KeyRecord | null>;
  listKeys(sourceId: string): Promise<KeyRecord[]>;
  /** Waits for the lock of the key's project (see the contract). */
  revokeKey(id: string, at: number): Promise<boolean>;
}

/** Reads that need no transaction of the caller's. */
export interface ReadStore {
  listEvents(sourceId: string, limit: number): Promise<StoredEvent[]>;
  findPerson(projectId: string, lookup: PersonLookup): Promise<PersonView | null>;
  /** Events metered for the project in the month ("YYYY-MM", UTC). */
  usage(projectId: string, month: string): Promise<number>;
}

/** Key lookups for authentication; see "Keys" in the contract. */
export interface KeyStore {
  /**
   * The keys with these hashes (by hash, hex), with source and project,
   * leaving out any whose source, project or org is deleted. One statement.
   */
  lookUpKeys(hashes: Buffer[]): Promise<Map<string, AuthRecord>>;
  /** Changes whenever a lookup's answer may have; null: no cheap signal. */
  keysChangeMark(): string | null;
  /** The longest a lookup may take, waiting included, before it counts as failed. */
  readonly keyLookupLimitMs: number;
  /**
   * Sets each key's last use to the later of what it holds and the time
   * given: one durable write, of its own (no transaction of the caller's, no
   * lock), so it never waits behind writers of a project nor they behind it.
   */
  recordKeyUses(uses: Map<string, number>): Promise<void>;
}

/** Write transactions; see the contract at the top of this file. */
export interface WriteStore {
  /** 'one': transactions run one at a time; 'many': at once, serialised per project by lockProject. */
  readonly writers: 'one' | 'many';
  transaction<T>(fn: (tx: IngestTx) => Promise<T>, opts?: { keep?: boolean }): Promise<T>;
}

/** One engine: what an adapter provides. */
export interface Store extends WriteStore, KeyStore, ReadStore, RetentionStore, ErasureStore, Partial<FileBackups> {
  readonly admin: AdminStore;
  /** Console accounts and sessions (port-console.ts). */
  readonly accounts: AccountStore;
  /** Lists and summaries for the console and the list commands (port-console.ts). */
  readonly listings: ListingStore;
  /** Events read in keyset pages: export, paging and filters. */
  readonly eventPages: EventPages;
  /** Destinations, their cursors and leases, and the reads of delivery (port-destinations.ts). */
  readonly destinations: DestinationStore;
  /** Resolves once the store answers a trivial query; rejects with StoreUnavailableError otherwise. */
  ping(): Promise<void>;
  /**
   * Work a server does once before it listens, so that its first requests do
   * not wait for it (the embedded store fills its insert_ids from the rows).
   * Admin commands never call it.
   */
  prepareToServe?(): Promise<void>;
  /** Ends background work and closes; the domain has sent its last writes before. */
  close(): Promise<void>;
}

/** A database failure; see "Errors" in the contract. Answered as 503. */
export class StoreUnavailableError extends Error {
  /** The store answered and refused these writes for what they hold. */
  readonly refused: boolean;

  constructor(message: string, options?: { cause?: unknown; refused?: boolean }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
    this.refused = options?.refused ?? false;
  }
}
