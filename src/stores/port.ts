/**
 * The store port: everything Inlet asks of a database (`Store`), and the
 * engine contract, what an engine must provide for it (`Engine`, with the
 * ingest seam `IngestTx`, the few pieces of SQL that differ `SqlEngine`, and
 * delivery's positions `DestinationsEngine`): one file. The ingest engine
 * (domain/ingest), key lookup batching (domain/key-book.ts), key-use
 * batching (domain/key-uses.ts), the plan of retention (domain/retention.ts)
 * and the rules of erasure (domain/erasure.ts) live in the domain, once, and
 * reach a database only through this file.
 *
 * An engine is one folder under stores/ (sqlite/, postgres/) that implements
 * `Engine`: the request path (write transactions under the project lock and
 * key lookups, hand-written and tuned), its batching policy, the deletion of
 * events in short steps (retention and erasure), its lifecycle, a Kysely
 * instance over its connection with the few pieces of SQL that differ
 * (`sql`), and the two reads no query written once serves (a person's
 * events, a page of people). Its write queue and caches, if it has any, are
 * its own. Everything else a Store is (admin, accounts, listings, reads,
 * event pages, retention's and erasure's bookkeeping) is built once from an
 * Engine by stores/sql (sql-store.ts), which also holds a Kysely default for
 * every read an engine may tune (defaults.ts): an engine's store class hands
 * SqlStore the few it replaces, outside the contract. An engine imports this
 * file, stores/sql and its driver, nothing above, and holds no rule of
 * Inlet's. Every engine passes the same conformance suite
 * (test/conformance); see docs/design.md, "One data layer", for how to add
 * an engine or a table.
 *
 * The contract, for every engine:
 *
 * Transactions (`transaction`). `fn` runs on one IngestTx between BEGIN and
 * COMMIT (or ROLLBACK when `keep` is false, as a dry run is); everything it
 * writes is kept all together or not at all. COMMIT resolves only once the
 * writes are durable: on disk or acknowledged by the database server. If
 * `fn` throws, or COMMIT fails, nothing of the transaction is kept and the
 * promise rejects. An engine may run its transactions one after the other
 * (it queues them itself) or at once, writers of one project then taking
 * turns through the project lock; how jobs are gathered into transactions is
 * its policy (`batching`), which the ingest engine follows without knowing why.
 *
 * What a transaction may do: the IngestTx operations (`read`, `write`,
 * `savepoint`), each a fixed number of round trips whatever the size of its
 * lists. A store may hold writes back and send them with the next read, the
 * next savepoint, or before COMMIT: a write's failure can then surface at one
 * of those instead, always before the transaction commits, and reads in the
 * same transaction always see the writes held back. `fn` must not start
 * another transaction on the same store and wait for it (on an engine that
 * queues its transactions it would wait for itself).
 *
 * The project lock (taken by `read`, first). From the call until the transaction ends,
 * no other transaction, on any server of the same database, holds the lock of
 * that project: the meter, the plan limit, insert_ids, person links and the
 * key check are then decided on data no other writer is changing. Admin
 * changes that take a key out of service (revocation, deleting its source,
 * project or organization) wait for the lock of the projects they touch, so a
 * write that checked its key under the lock commits before the change, or
 * sees it. An erasure's first transaction takes it too (ErasureTx).
 *
 * Errors. A database failure rejects with StoreUnavailableError: `refused`
 * says the store answered and refused what was written (a constraint, a value
 * it cannot keep), so the same writes fail again while others may pass;
 * otherwise the store could not be reached, timed out, or the transaction as a
 * whole failed. Any other error is a bug and propagates as it is.
 *
 * Keys. `lookUpKeys` answers as a read of the database at the time of the
 * call would: a change committed before the call (a revocation, on this
 * server or another) is always seen. An engine may answer from memory only
 * where it has a cheap signal that nothing read has changed since (SQLite's
 * data_version); asking a database server costs the lookup's round trip anyway.
 *
 * Everything off the request path. Each admin write is durable when it
 * resolves, and never lands inside a running transaction (an engine that
 * queues its transactions runs it in its turn). Reads see committed data.
 * Deleting events (retention, erasure) goes in short steps, so that writers
 * never wait long. The console's accounts and lists (AccountStore,
 * ListingStore, in port-console.ts) keep the same rules.
 */
import type { AccountStore, ListingStore, PersonCursor } from './port-console.js';
import type { DestinationStore } from './port-destinations.js';
import type { AuthPlan, PlanStore } from './port-plans.js';
import type { OutcomeStore } from './port-outcomes.js';
import type { Expression, Kysely } from 'kysely';
import type { SqlDialect } from './sql/dialects.js';
import type { Database } from './sql/schema.js';

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
  /** The source's tracking plan, if it checks one (port-plans.ts): read with the key, so a change is seen by the next request. */
  plan: AuthPlan | null;
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
  /** The groups it is a member of, by type then key. */
  groups: GroupRef[];
}

/** A group: its type (one of at most 5 per project) and its key within the type. */
export interface GroupRef {
  groupType: string;
  groupKey: string;
}

/** A person's membership of a group. */
export interface Membership extends GroupRef {
  personId: string;
}

/** One trait to set on a group. */
export interface GroupTraitWrite extends GroupRef {
  key: string;
  /** JSON text of the value. */
  value: string;
  /** Item timestamp: newest wins per key; on a tie the later write wins. */
  setAt: number;
}

/** A group as `inlet group list` shows it. */
export interface GroupSummary extends GroupRef {
  traits: Record<string, unknown>;
  createdAt: number;
}

/** A group as `inlet group show` shows it: with its members (person ids, the first 1,000 in byte order). */
export interface GroupView extends GroupSummary {
  members: string[];
}

/** A page of a project's groups, by type then key. */
export interface GroupListQuery {
  groupType?: string;
  limit: number;
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

/** An event as the ingest pass writes it: a stored event's fields, with where it belongs. */
export interface NewEventRow extends Omit<StoredEvent, 'personId' | 'properties'> {
  projectId: string;
  sourceId: string;
  /** The person it is stored for. */
  personId: string;
  /** Properties and enrichment, as JSON text. */
  properties: string;
}

/** One trait to set on a person. */
export interface TraitWrite {
  personId: string;
  key: string;
  /** JSON text of the value; null: the trait is unset (a tombstone, ordered by setAt as a value is). */
  value: string | null;
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

/** A person the pass creates. */
export interface NewPerson {
  id: string;
  kind: PersonKind;
}

/** A distinct_id linked to a person. */
export interface NewLink {
  distinctId: string;
  personId: string;
}

/** A person folded into another: its ids, traits (newest per key) and, on read, events. */
export interface Merge {
  from: string;
  into: string;
}

/** An insert_id of the source recorded as stored, with the event it names (null for an identify). */
export interface InsertIdClaim {
  insertId: string;
  eventId: string | null;
}

/**
 * What a pass reads, all at once, under the project lock. Each list is asked
 * for as it is; an empty list reads nothing (and the engine sends no
 * statement for it).
 */
export interface PassQuery {
  projectId: string;
  sourceId: string;
  /** Keys whose state is read. */
  keyIds: string[];
  /** Metering months whose usage is read, with the plan limit; when empty, neither is read. */
  months: string[];
  /** insert_ids of the source looked up. */
  insertIds: string[];
  /** distinct_ids whose links are read. */
  linkedIds: string[];
  /** Person ids read, each followed through a merge. */
  personIds: string[];
  /** Ids checked for suppression (their person was erased with it), by kind. */
  suppressed: { distinctIds: string[]; personIds: string[] };
  /** distinct_ids whose person is asked whether it holds another distinct_id too (an alias's previous_id). */
  withOtherIds?: string[];
  /** Whether the project's group types are read. */
  groupTypes?: boolean;
  /** Groups looked up, to know which exist. */
  groups?: GroupRef[];
}

/** What `read` answers, field by field to the query; ids not found are missing from the maps. */
export interface PassState {
  /** Keys by id as they are now. */
  keys: Map<string, KeyState>;
  /** Null when there is no limit, or when no month was asked. */
  monthlyEventLimit: number | null;
  /** Events metered, by month asked; a month missing has none. */
  usage: Map<string, number>;
  /** insert_id → event id (null for an identify) of those already stored. */
  insertIds: Map<string, string | null>;
  /** distinct_id → the person it is linked to now. */
  links: Map<string, PersonRef>;
  /** person id → the person it is now. */
  persons: Map<string, PersonRef>;
  /** Those of the ids asked whose items are dropped. */
  suppressed: SuppressedIds;
  /** Those of PassQuery.withOtherIds whose person holds another distinct_id too. */
  withOtherIds: Set<string>;
  /** The project's group types, when asked (else empty). */
  groupTypes: string[];
  /** Those of the groups asked that exist. */
  groups: GroupRef[];
}

/** What every write of a pass is of. */
export interface PassScope {
  projectId: string;
  sourceId: string;
  /** When the persons created were created. */
  now: number;
}

/**
 * Everything a pass writes, applied by `write` in the order of the fields
 * (PASS_WRITE_ORDER): a field's writes may rely on those of the fields
 * before it, never on those after. An empty list writes nothing.
 */
export interface PassWrites {
  /** Persons created. */
  persons: NewPerson[];
  /**
   * Links of distinct_ids that had none (as read under the lock). One already
   * linked must fail the transaction: a link changes only by a merge.
   */
  links: NewLink[];
  /** Merges, in the order decided; each re-points the links written before it, these included. */
  merges: Merge[];
  /** Traits, one per (person, key) (newestTraits), set after the merges so that they win over traits merged; a null value is an unset. */
  traits: TraitWrite[];
  /** Traits set only where the person has no value (no row, or an unset one), after the traits. */
  setOnce: TraitWrite[];
  /** Group types the project did not have (at most 5 in all, decided under the lock). */
  groupTypes: string[];
  /** Groups made; one that exists already is left as it is. */
  groups: GroupRef[];
  /** Group traits, one per (group, key): newest wins by setAt, as for traits. */
  groupTraits: GroupTraitWrite[];
  /** Memberships of persons in groups; one held already is left as it is. */
  members: Membership[];
  /** Events; a row whose `event` is null is refused (StoreUnavailableError, refused), as a NOT NULL column does. */
  events: NewEventRow[];
  /** insert_ids claimed, after the events they name. A conflict must fail the transaction (it cannot happen under the lock). */
  insertIds: InsertIdClaim[];
  /** Events metered, added to each month's usage. */
  usage: Map<string, number>;
  /**
   * What became of the pass's items, added to the source's counts of each
   * minute (port-outcomes.ts): in the same transaction as the items, so the
   * counts of written items are exact. One entry per minute, outcome and code.
   */
  outcomes: PassOutcome[];
}

/** Items of the pass's source that arrived in one minute with one outcome and code ('' for accepted and duplicate). */
export interface PassOutcome {
  minute: number;
  outcome: 'accepted' | 'duplicate' | 'dropped';
  code: string;
  count: number;
}

/** The order `write` applies a bundle's fields in: every field, once. */
export const PASS_WRITE_ORDER = [
  'persons', 'links', 'merges', 'traits', 'setOnce', 'groupTypes', 'groups', 'groupTraits', 'members', 'events', 'insertIds', 'usage', 'outcomes',
] as const satisfies readonly (keyof PassWrites)[];
// A field of PassWrites missing from the order fails here.
const writeOrderComplete: Exclude<keyof PassWrites, (typeof PASS_WRITE_ORDER)[number]> extends never ? true : never = true;
void writeOrderComplete;

/** A bundle with nothing in it, for a pass to fill. */
export function noPassWrites(): PassWrites {
  return {
    persons: [], links: [], merges: [], traits: [], setOnce: [], groupTypes: [], groups: [], groupTraits: [], members: [], events: [], insertIds: [], usage: new Map(),
    outcomes: [],
  };
}

/**
 * The seam between the ingest domain and an engine: a pass (domain/ingest,
 * domain/people) reads what its jobs need in one call, decides everything in
 * memory (dedup, metering, plan limit, suppression, people, traits) and hands
 * the engine its writes in one call. The rules live in the domain, once; an
 * engine only reads and writes rows, in hand-written SQL of its own (this is
 * the hot path: no query builder).
 *
 * `read` takes the project's lock before it reads anything: from then until
 * the transaction ends no other transaction, on any server of the same
 * database, holds the lock of that project (see the contract). It sees the
 * writes made earlier in the transaction.
 *
 * `write` applies a bundle in PASS_WRITE_ORDER. An engine handles every field
 * of PassWrites in a record typed `{ [K in keyof PassWrites]-?: ... }` (or
 * one that leaves out only fields it handles by name), so a field added to
 * PassWrites does not compile until every engine writes it; a table new to
 * the ingest path is a field of PassQuery and PassState if the pass reads
 * it, a field of PassWrites if it writes it, and its place in
 * PASS_WRITE_ORDER. A store may hold a bundle back and send it with the next
 * read, savepoint, or before COMMIT (see the contract).
 */
export interface IngestTx {
  read(q: PassQuery): Awaitable<PassState>;
  write(scope: PassScope, w: PassWrites): Awaitable<void>;
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

// ---- retention ---------------------------------------------------------------

/** A project's retention, as the domain reads it to plan a step (domain/retention.ts). */
export interface ProjectRetention {
  projectId: string;
  retentionDays: number;
}

/** What a retention step deletes: the domain decides it, an engine only deletes. */
export interface ExpiryPlan {
  /** Each project's events with a timestamp below `before` have expired. */
  cutoffs: { projectId: string; before: number }[];
  /** Every project's events below this have expired: an engine may delete a whole stretch of time ending by then at once. */
  allBefore: number;
}

/** What one retention step removed. */
export interface ExpiryStep {
  /** Events deleted and counted. */
  deleted: number;
  /** Stretches of time dropped whole, their events not counted one by one. */
  dropped: number;
  /** Whether expired events may be left: call again. */
  more: boolean;
}

/**
 * Deletes events older than their project's retention, as the domain's plan
 * says (the cutoffs are its rule). A step is short (one small transaction,
 * or one stretch of time dropped whole) so that writers never wait long; the
 * caller repeats steps until none is left. Deleted projects' events expire too.
 */
export interface RetentionStore {
  /** Every project's retention, deleted projects included. */
  projectRetentions(): Promise<ProjectRetention[]>;
  /** One step of the plan: about `batch` events at most. */
  expireEvents(plan: ExpiryPlan, batch: number): Promise<ExpiryStep>;
}

/**
 * The keys of a person's events, folded in off the request path
 * (docs/design.md, "A person's events"): the domain's job
 * (domain/people/person-events-fold.ts) decides when and how much; a step
 * is short, reads at most `window` events, and may run again or on several
 * servers at once without harm.
 */
export interface PersonEventsFold {
  /** The projects whose events are folded in (live ones). */
  foldProjects(): Promise<string[]>;
  /**
   * One step for a project: its events among the next `window` seqs past its
   * mark; `more` while its head is further; `ms`, how long the step itself
   * took (not its wait for its turn); `heldWriter`, whether ingestion had to wait meanwhile.
   */
  foldPersonEvents(projectId: string, window: number): Promise<FoldStep>;
  /**
   * One step of merging a project's runs of keys (the store keeps them as
   * sorted runs, one a fold step: docs/design.md, "A person's events"):
   * continues the merge under way, or starts the one its runs call for;
   * about `batch` keys read. `folded` counts the keys read; `more` while a
   * merge is under way or another is called for.
   */
  mergePersonEventRuns(projectId: string, batch: number): Promise<FoldStep>;
  /**
   * One step of retention for the keys: deletes the keys of events before
   * `before` from where `after` says (null: the start; else a cursor the
   * last step returned, opaque), about `batch` keys read; `next` is where
   * the following step starts, null once the last key was reached.
   */
  expirePersonEventKeys(projectId: string, before: number, after: string | null, batch: number): Promise<{ deleted: number; next: string | null }>;
}

/** What a step of the fold did (PersonEventsFold.foldPersonEvents). */
export interface FoldStep {
  folded: number;
  more: boolean;
  ms: number;
  /**
   * Whether the step held what ingestion needs meanwhile (SQLite's one
   * writer, on the thread that serves requests): the fold then backs off.
   */
  heldWriter: boolean;
  /** Whether the project's runs of keys call for a merge (mergePersonEventRuns) now. */
  merge: boolean;
}

// ---- erasure -------------------------------------------------------------------

/** An erasure whose events are not all deleted yet. */
export interface PendingErasure {
  id: number;
  projectId: string;
  /** The person and every person merged into it: events carry the person they were stored for. */
  personIds: string[];
  /**
   * Where the newest event stored when the person was forgotten stands in the
   * order events arrive: no event that arrived later is the person's. A
   * number only the store reads.
   */
  arrivedThrough: number;
}

/** What erasing a person removed (domain/erasure.ts). */
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
 * What an erasure reads and writes in its first transaction; the rules of
 * which persons go and what is suppressed are the domain's
 * (domain/erasure.ts).
 */
export interface ErasureTx {
  /** Takes the project's lock until the transaction ends, the lock IngestTx.read takes first. */
  lockProject(projectId: string): Promise<void>;
  /** The person a distinct_id is linked to, or a person id names, as it is now (a merge followed); null: none. */
  currentPerson(projectId: string, lookup: PersonLookup): Promise<string | null>;
  /** The persons merged into this one. */
  mergedInto(projectId: string, personId: string): Promise<string[]>;
  /** The distinct_ids linked to any of these persons, in byte order. */
  linkedIds(projectId: string, personIds: string[]): Promise<string[]>;
  /** Suppresses the distinct_ids and the person ids, each recorded as erased with `erasedPersonId`. */
  suppress(projectId: string, erasedPersonId: string, ids: { distinctIds: string[]; personIds: string[] }, now: number): Promise<void>;
  /** Deletes the persons, their links (these distinct_ids), their traits, their group memberships (never the groups), and the items kept as samples (port-outcomes.ts) that named them. */
  removePersons(projectId: string, personIds: string[], distinctIds: string[]): Promise<void>;
  /** Records the erasure of these persons' events, every one stored until now, as pending, touched now. */
  recordPending(projectId: string, personIds: string[]): Promise<PendingErasure>;
  /** Lifts a suppressed distinct_id; null when it was not suppressed, else the person erased with it (null: none recorded). */
  liftDistinctId(projectId: string, distinctId: string): Promise<{ erasedPersonId: string | null } | null>;
  /** The person whose erasure suppressed this person id; null when it is not suppressed. */
  erasureOfPersonId(projectId: string, personId: string): Promise<string | null>;
  /** Lifts every person id suppressed by the erasure of `erasedPersonId`. */
  liftPersonIdsOf(projectId: string, erasedPersonId: string): Promise<void>;
}

/**
 * What an erasure needs of a store; the rules and their order are the
 * domain's (domain/erasure.ts). Times of pending records are the store's own
 * clock: the database server's where processes on several machines share
 * one, so that their clocks need not agree.
 */
export interface ErasureStore {
  /** Runs `fn` in one write transaction, kept all together or not at all. */
  erasureTransaction<T>(fn: (tx: ErasureTx) => Promise<T>): Promise<T>;
  /** Pending erasures no step has touched for `idleMs` or more. */
  staleErasures(idleMs: number): Promise<PendingErasure[]>;
  /**
   * Deletes the erasure's events (its persons', arrived up to
   * `arrivedThrough`, in every source of the project) in short steps,
   * touching its record at each. Once `stopping()` is true no further step
   * starts (`done` false then).
   */
  deleteErasedEvents(e: PendingErasure, opts?: { stopping?: () => boolean }): Promise<{ eventsDeleted: number; done: boolean }>;
  /** Removes the pending record: every event of the erasure is deleted. */
  endErasure(id: number): Promise<void>;
}

// ---- admin and reads -------------------------------------------------------------

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
export interface ReadStore extends GroupStore {
  listEvents(sourceId: string, limit: number): Promise<StoredEvent[]>;
  findPerson(projectId: string, lookup: PersonLookup): Promise<PersonView | null>;
  /** Events metered for the project in the month ("YYYY-MM", UTC). */
  usage(projectId: string, month: string): Promise<number>;
}

/** Groups, read off the ingest path (written once, stores/sql/groups.ts). */
export interface GroupStore {
  findGroup(projectId: string, groupType: string, groupKey: string): Promise<GroupView | null>;
  listGroups(projectId: string, q: GroupListQuery): Promise<GroupSummary[]>;
}

// ---- what an engine provides -------------------------------------------------------

/**
 * How the ingest engine (domain/ingest/engine.ts) gathers jobs into
 * transactions: an engine's policy, chosen for how it writes. Jobs of one
 * lane share transactions, one transaction of a lane at a time; lanes run at
 * once. A transaction holding jobs of several projects or sources writes
 * each project+source batch under a savepoint of its own.
 */
export interface Batching {
  /** The lane of a job, by its project and source: '' for one lane for all. Called once per job. */
  lane(projectId: string, sourceId: string): string;
  /** Items a transaction takes at most (a job bigger than that goes alone). */
  readonly maxItems: number;
  /** Turns of the event loop a lane waits before it starts, so that jobs arriving together go together. */
  readonly gatherTurns: number;
}

/** Write transactions; see "Transactions" in the contract. */
export interface WriteStore {
  /** How jobs are gathered into transactions on this engine. */
  readonly batching: Batching;
  transaction<T>(fn: (tx: IngestTx) => Promise<T>, opts?: { keep?: boolean }): Promise<T>;
}

/** Key lookups for authentication; see "Keys" in the contract. */
export interface KeyStore {
  /**
   * The keys with these hashes (by hash, hex), with source and project,
   * leaving out any whose source, project or org is deleted. One statement at most.
   */
  lookUpKeys(hashes: Buffer[]): Promise<Map<string, AuthRecord>>;
  /**
   * Sets each key's last use to the later of what it holds and the time
   * given: one durable write, of its own (no transaction of the caller's, no
   * lock), so it never waits behind writers of a project nor they behind it.
   */
  recordKeyUses(uses: Map<string, number>): Promise<void>;
}

/** The request path, an engine's own, reached without a layer between. */
export interface HotPath extends WriteStore, KeyStore {}

/** Starting and stopping. */
export interface Lifecycle {
  /** Resolves once the store answers a trivial query; rejects with StoreUnavailableError otherwise. */
  ping(): Promise<void>;
  /**
   * Work a server does once before it listens, so that its first requests do
   * not wait for it. Admin commands never call it.
   */
  prepareToServe?(): Promise<void>;
  /** Ends background work and closes; the domain has sent its last writes before. */
  close(): Promise<void>;
  /**
   * A consistent copy of the whole store in one new file (`toFile`, which
   * must not exist yet), taken while servers keep writing; its size in bytes.
   * Only an engine that is one file has it; a database server has its own
   * tools (pg_dump).
   */
  backup?(toFile: string): Promise<number>;
}

/**
 * What an engine provides (see the contract above): 14 members, with the 3
 * of IngestTx, the 5 of SqlEngine and the 2 of DestinationsEngine, 24 in
 * all. What it may tune beyond these (the reads it shapes to its own indexes
 * and threads, delivery's turns, its key lookup's time limit) is not part of
 * the contract: each has a default in stores/sql/defaults.ts, and an
 * engine's store class hands SqlStore only the ones it replaces.
 */
export interface Engine extends HotPath, Lifecycle {
  /** Its queries and dialect, for everything written once (stores/sql). */
  readonly sql: SqlEngine;
  /**
   * Runs `fn`, a write off the ingest path, in its turn with the engine's
   * other writes (never inside a running ingest transaction). With
   * `transaction`, `fn` runs in one write transaction (an erasure's, its
   * bookkeeping) isolated as an ingest transaction is; without, it opens its
   * own if it needs one. An engine that keeps anything in memory (SQLite's
   * keys and person links) learns here that it may have changed.
   */
  write<T>(fn: (db: Kysely<Database>) => Promise<T>, opts?: { transaction?: boolean }): Promise<T>;
  /** Up to `limit` people newest first, after the cursor, each with up to `ids` of its distinct ids. */
  personPage(projectId: string, after: PersonCursor | null, limit: number, ids: number): Promise<PersonPageRow[]>;
  /** ErasureStore.deleteErasedEvents, `touch` called before each step (it touches the record). */
  deleteErasedEvents(e: PendingErasure, steps: { touch: () => Promise<void>; stopping?: () => boolean }): Promise<{ eventsDeleted: number; done: boolean }>;
  /** RetentionStore.expireEvents: one short step of the plan. */
  expireEvents(plan: ExpiryPlan, batch: number): Promise<ExpiryStep>;
  /** Delivery's positions, the engine's own way (sql/destinations.ts). */
  readonly destinations: DestinationsEngine;
}

/**
 * What an engine gives the queries written once: a Kysely instance over its
 * own connection (its dialect, its error mapping), the name of its dialect's
 * pieces of SQL, and the few that are the engine's behaviour, not its
 * dialect's (its locks, its clock, its arrival positions). Each is a small
 * function, never a copy of a query.
 */
export interface SqlEngine {
  /**
   * Queries and transactions. A transaction is isolated from every other
   * writer of the database, on any server or process: SQLite begins it
   * IMMEDIATE (the file's write lock first), PostgreSQL locks what it reads
   * where `rowLocks` says so.
   */
  readonly db: Kysely<Database>;
  /** The dialect's pieces of SQL (sql/dialects.ts), which the engine names and does not give. */
  readonly dialect: SqlDialect;
  /**
   * In a transaction: waits for the lock of each project (in the order
   * given), the lock every write of that project holds (the one IngestTx.read takes).
   * Nothing to do where writers take turns on the whole database.
   */
  lockProjects(trx: Kysely<Database>, projectIds: string[]): Promise<void>;
  /**
   * Now, in epoch ms: the database server's clock where processes on several
   * machines share one (their clocks need not agree), the process's on
   * SQLite, whose processes share one machine.
   */
  clock(): Expression<number>;
  /**
   * In a transaction under the project lock: a number at or above every
   * stored event's `seq`, and below every later one's (the arrival position
   * of PendingErasure.arrivedThrough).
   */
  newestArrival(): Expression<number>;
}

/**
 * What an engine gives destinations, because it differs: how far a
 * project's events are safe to read and where a time stands among them.
 * Delivery's reads themselves are written once (sql/destinations.ts); an
 * engine may tune them (sql/defaults.ts).
 */
export interface DestinationsEngine {
  /** port-destinations.ts, `head`: the position up to which the project's events are all readable. */
  head(projectId: string): Promise<number>;
  /** port-destinations.ts, `positionBefore`. */
  positionBefore(projectId: string, at: number): Promise<number>;
}

/**
 * Where an event stands among a source's events: its timestamp, then `seq`,
 * the engine's own number for the row (SQLite's storage order, PostgreSQL's
 * sequence), which only breaks ties. Never leaves the store: the port sees
 * it as an opaque EventCursor.
 */
export interface EventPosition {
  timestamp: number;
  seq: number;
}

/** A page asked of the engine: the port's query, its cursor read back into a position. */
export interface PositionedPageQuery extends Omit<EventPageQuery, 'after'> {
  after: EventPosition | null;
}

/**
 * The events of a page, with what places each (sql/event-pages.ts's
 * `eventRows` selects them): the current person (merges followed) and the
 * properties as JSON text.
 */
export interface EventRow {
  seq: number;
  id: string;
  event: string;
  distinct_id: string | null;
  anonymous_id: string | null;
  person_id: string;
  session_id: string | null;
  timestamp: number;
  received_at: number;
  insert_id: string | null;
  properties: string;
}

/** A person of a page, with its first distinct ids (its merged persons' included), in byte order. */
export interface PersonPageRow {
  id: string;
  createdAt: number;
  ids: string[];
}

// ---- the store -----------------------------------------------------------------

/** What the rest of Inlet uses: an engine's request path, with everything off it built once. */
export interface Store extends HotPath, Lifecycle, ReadStore, RetentionStore, ErasureStore, PersonEventsFold {
  /** The longest a key lookup may take, waiting included, before it counts as failed. */
  readonly keyLookupLimitMs: number;
  readonly admin: AdminStore;
  /** Console accounts and sessions (port-console.ts). */
  readonly accounts: AccountStore;
  /** Lists and summaries for the console and the list commands (port-console.ts). */
  readonly listings: ListingStore;
  /** Events read in keyset pages: export, paging and filters. */
  readonly eventPages: EventPages;
  /** What became of every item: counts per source and minute, and kept samples (port-outcomes.ts). */
  readonly outcomes: OutcomeStore;
  /** Destinations, their cursors and leases, and the reads of delivery (port-destinations.ts). */
  readonly destinations: DestinationStore;  /** Tracking plans, their versions and each source's choice (port-plans.ts). */
  readonly plans: PlanStore;
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
