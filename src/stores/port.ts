/**
 * The store port: everything Inlet asks of a database. Each engine is one
 * folder under stores/ implementing it, and every engine must pass the same
 * conformance suite (test/conformance). Nothing outside an engine's folder
 * knows which engine it talks to.
 *
 * Contract, for every engine:
 * - `ingest` resolves only once the job's writes are durable (committed and
 *   flushed); a job is written all or nothing; a failure rejects with
 *   StoreUnavailableError and leaves nothing of the job behind.
 * - A dry-run job runs the same logic and leaves nothing behind at all.
 * - `(source, insert_id)` is stored once, also under concurrent jobs on many
 *   connections and servers; one new distinct_id makes one person.
 * - Changes made by `admin` are seen by `authenticate` on its next call, from
 *   any process on the same database.
 */
import type { DropReason } from '../errors/codes.js';
import type { PreparedItem } from '../pipeline/check-item.js';

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

// ---- ingestion --------------------------------------------------------------

/** One request's worth of valid, not-dropped items, to be written together. */
export interface IngestJob {
  projectId: string;
  sourceId: string;
  keyId: string;
  /** Epoch ms at arrival: the metering month comes from it. */
  receivedAt: number;
  /** Items in request order; each has its enrichment already worked out. */
  items: EnrichedItem[];
  /** Run everything, keep nothing. */
  dryRun: boolean;
}

export interface EnrichedItem extends PreparedItem {
  /** Server-set properties stored with a track event ($source_id, $browser, ...). */
  enrichment: Record<string, unknown>;
}

export type ItemOutcome =
  | { index: number; status: 'accepted'; eventId: string | null; personId: string; personIsNew: boolean }
  | { index: number; status: 'duplicate'; eventId: string | null }
  | { index: number; status: 'dropped'; reason: DropReason };

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

// ---- the transaction the domain's algorithms run in ------------------------

export type PersonKind = 'browser' | 'server';

export interface PersonRef {
  /** The person now (after following a merge). */
  id: string;
  kind: PersonKind;
}

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

export interface TraitWrite {
  personId: string;
  key: string;
  /** JSON text of the value. */
  value: string;
  /** Item timestamp: newest wins per key; on a tie the later write wins. */
  setAt: number;
}

/**
 * The bulk operations the ingest and people algorithms (domain/) need inside
 * one transaction. Each call costs one round trip at most, whatever its size;
 * a store may hold writes back and send them together with the next read or
 * at the end of the transaction (PostgreSQL does), so a write's failure may
 * surface there instead, and always before the transaction commits.
 */
export interface IngestTx {
  /** Serialises writers of one project until the transaction ends. */
  lockProject(projectId: string): Awaitable<void>;
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
  /** Links each distinct_id to a person, replacing any link it had. */
  setLinks(projectId: string, links: { distinctId: string; personId: string }[]): Awaitable<void>;
  /** Folds `from` into `into`: ids, traits (newest per key) and, on read, events. */
  mergePerson(projectId: string, from: string, into: string): Awaitable<void>;
  upsertTraits(projectId: string, traits: TraitWrite[]): Awaitable<void>;
  insertEvents(rows: NewEventRow[]): Awaitable<void>;
  /** Those of the distinct_ids whose items are dropped (their person was erased with suppression). */
  findSuppressed(projectId: string, distinctIds: string[]): Awaitable<Set<string>>;
}

// ---- reading events in pages (export, paging) -------------------------------

/** A position in a source's events, ordered by timestamp then by the order they were stored in. */
export interface EventCursor {
  timestamp: number;
  /** The engine's own storage order; only meaningful to the store that gave it. */
  seq: number;
}

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
  /** Where an event of the source stands (for paging before it); null when the source has no such event. */
  eventCursor(sourceId: string, eventId: string): Promise<EventCursor | null>;
  /** Every source of the project, deleted ones included (their events are the project's). */
  sourceIdsOf(projectId: string): Promise<string[]>;
}

// ---- retention -----------------------------------------------------------------

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
 * Deletes events whose timestamp is older than their project's retention.
 * A step is short (one small transaction, or one day table) so that writers
 * never wait long; the caller repeats steps until none is left.
 */
export interface RetentionStore {
  expireEvents(now: number, batch: number): Promise<ExpiryStep>;
}

// ---- erasure -------------------------------------------------------------------

/** What erasing a person removed. */
export interface ErasedPerson {
  personId: string;
  /** The distinct_ids that were linked to the person (and, with suppression, are now suppressed). */
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
 */
export interface ErasureStore {
  /** Null when the project has no such person. */
  erasePerson(projectId: string, lookup: PersonLookup, opts: { suppress: boolean; now: number }): Promise<ErasedPerson | null>;
  /** Lets items for the distinct_id be stored again; false when it was not suppressed. */
  unsuppress(projectId: string, distinctId: string): Promise<boolean>;
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

export interface AdminStore {
  createOrg(org: Org): Promise<void>;
  getOrg(id: string): Promise<Org | null>;
  /** The organization named "default", made on first use. */
  defaultOrg(make: () => Org): Promise<Org>;
  deleteOrg(id: string, at: number): Promise<boolean>;
  createProject(project: Project): Promise<void>;
  getProject(id: string): Promise<Project | null>;
  updateProject(id: string, patch: Partial<Pick<Project, 'apiEnabled' | 'monthlyEventLimit' | 'retentionDays'>>): Promise<Project | null>;
  deleteProject(id: string, at: number): Promise<boolean>;
  createSource(source: Source): Promise<void>;
  getSource(id: string): Promise<Source | null>;
  updateSource(id: string, patch: Partial<Pick<Source, 'filterBots' | 'recordIp'>>): Promise<Source | null>;
  deleteSource(id: string, at: number): Promise<boolean>;
  /**
   * Adds a key unless the source would then hold more than `maxWorking` keys
   * that still work; `replaces` sets another key of the source to expire.
   * Checked and written in one transaction.
   */
  addKey(
    key: KeyRecord,
    opts: { now: number; maxWorking: number; replaces?: { keyId: string; expiresAt: number } },
  ): Promise<'ok' | 'too_many_keys'>;
  getKey(id: string): Promise<KeyRecord | null>;
  listKeys(sourceId: string): Promise<KeyRecord[]>;
  revokeKey(id: string, at: number): Promise<boolean>;
}

export interface Store extends RetentionStore, ErasureStore, Partial<FileBackups> {
  readonly admin: AdminStore;
  /** Events read in keyset pages: export, paging and filters. */
  readonly eventPages: EventPages;
  /** The key with this hash, with its source and project, unless any of them (or the org) is deleted. */
  authenticate(hash: Buffer): Promise<AuthRecord | null>;
  /** Notes that a key was used; written lazily, at most about once a second. */
  recordKeyUse(keyId: string, at: number): void;
  /** Writes one request's items durably, or runs them dry. See the contract above. */
  ingest(job: IngestJob): Promise<ItemOutcome[]>;
  /** Runs `fn` in one durable transaction (used by the admin people commands). */
  transaction<T>(fn: (tx: IngestTx) => Promise<T>): Promise<T>;
  listEvents(sourceId: string, limit: number): Promise<StoredEvent[]>;
  findPerson(projectId: string, lookup: PersonLookup): Promise<PersonView | null>;
  /** Events metered for the project in the month ("YYYY-MM", UTC). */
  usage(projectId: string, month: string): Promise<number>;
  /** Resolves once the store answers a trivial query; rejects with StoreUnavailableError otherwise. */
  ping(): Promise<void>;
  /** Waits for pending writes, then closes. */
  close(): Promise<void>;
}

/** Told of every group commit, for metrics; it must not throw or wait. */
export interface IngestObserver {
  /** A commit that returned: how long it took, and the jobs (requests) and items it wrote. */
  committed(seconds: number, jobs: number, items: number): void;
  /** A commit that failed: its jobs were retried alone or answered 503. */
  failed(): void;
}

/** The durable write failed; nothing of the job is stored. Answered as 503. */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
  }
}
