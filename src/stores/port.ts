/**
 * The store port: everything Inlet asks of a database (`Store`). The ingest
 * engine (domain/ingest), key lookup batching (domain/key-book.ts), key-use
 * batching (domain/key-uses.ts), the plan of retention (domain/retention.ts)
 * and the rules of erasure (domain/erasure.ts) live in the domain, once, and
 * reach a database only through this file. What an engine must provide for
 * it, and the rules every engine keeps, are one contract: stores/engine.ts.
 */
import type { HotPath, Lifecycle } from './engine.js';
import type { AccountStore, ListingStore } from './port-console.js';
import type { DestinationStore } from './port-destinations.js';
import type { OutcomeStore } from './port-outcomes.js';

export type { Batching, HotPath, KeyStore, Lifecycle, WriteStore } from './engine.js';

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

// ---- the store -----------------------------------------------------------------

/** What the rest of Inlet uses: an engine's request path, with everything off it built once. */
export interface Store extends HotPath, Lifecycle, ReadStore, RetentionStore, ErasureStore {
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
  readonly destinations: DestinationStore;
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
