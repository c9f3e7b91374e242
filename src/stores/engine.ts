/**
 * The engine contract: everything an engine provides, in one place. An
 * engine is one folder under stores/ (sqlite/, postgres/) that implements
 * `Engine`: the request path (write transactions under the project lock and
 * key lookups, hand-written and tuned), its batching policy, the deletion of
 * events in short steps (retention and erasure), its lifecycle, a Kysely
 * instance over its connection with the few pieces of SQL that differ
 * (`sql`), and the reads it tunes to its own indexes. Everything else a
 * Store is (admin, accounts, listings, reads, event pages, retention's and
 * erasure's bookkeeping) is built once from an Engine by stores/sql (sql-store.ts),
 * which also holds a Kysely default for every read an engine may leave out
 * (defaults.ts). An engine imports this file, port.ts, stores/sql and its
 * driver, nothing above, and holds no rule of Inlet's. Every engine passes
 * the same conformance suite (test/conformance); see docs/design.md, "One
 * data layer", for how to add an engine or a table.
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
import type { AliasableExpression, CompiledQuery, Expression, Kysely, SqlBool } from 'kysely';
import type { AuthRecord, EventPageQuery, ExpiryPlan, ExpiryStep, IngestTx, PendingErasure, StoredEvent } from './port.js';
import type { PersonCursor } from './port-console.js';
import type { DestinationsEngine } from './sql/destinations.js';
import type { Database } from './sql/schema.js';

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
   * leaving out any whose source, project or org is deleted. One statement.
   */
  lookUpKeys(hashes: Buffer[]): Promise<Map<string, AuthRecord>>;
  /** The longest a lookup may take, waiting included, before it counts as failed. */
  readonly keyLookupLimitMs: number;
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

/** What an engine provides (see the contract above). */
export interface Engine extends HotPath, Lifecycle {
  /** Its queries and dialect, for everything written once (stores/sql). */
  readonly sql: SqlEngine;
  /**
   * Runs `fn`, a write off the ingest path that opens its own transaction if
   * it needs one, in its turn with the engine's other writes (never inside a
   * running ingest transaction). An engine that keeps anything in memory
   * (SQLite's keys) learns here that it may have changed.
   */
  write<T>(fn: () => Promise<T>): Promise<T>;
  /**
   * Runs `fn` in one write transaction (an erasure's, its bookkeeping),
   * isolated as an ingest transaction is, in its turn with them.
   */
  writeTransaction<T>(fn: (db: Kysely<Database>) => Promise<T>): Promise<T>;
  /** The reads it shapes to its own indexes and threads. */
  readonly reads: EngineReads;
  /** ErasureStore.deleteErasedEvents, `touch` called before each step (it touches the record). */
  deleteErasedEvents(e: PendingErasure, steps: { touch: () => Promise<void>; stopping?: () => boolean }): Promise<{ eventsDeleted: number; done: boolean }>;
  /** RetentionStore.expireEvents: one short step of the plan. */
  expireEvents(plan: ExpiryPlan, batch: number): Promise<ExpiryStep>;
  /** Delivery's reads and positions, the engine's own way (sql/destinations.ts). */
  readonly destinations: DestinationsEngine;
}

/**
 * The reads an engine tunes. Those marked optional have a default in
 * stores/sql/defaults.ts, one Kysely query on the engine's connection, so an
 * engine writes only what it must: PostgreSQL takes the default event pages,
 * SQLite (no index on events) walks its minute index instead.
 */
export interface EngineReads {
  /** A page of a source's events in its order, `limit` at most (never asked for less than one). */
  eventPage?(q: PositionedPageQuery): Promise<EventRow[]>;
  /** Where the source's event with this id stands; the id is a UUID in lower case. */
  eventPosition?(sourceId: string, eventId: string): Promise<EventPosition | null>;
  /**
   * A query written once that scans many rows (the chart's and the source
   * page's counts, group pages), run where such reads run: never on the
   * SQLite connection that writes, within PostgreSQL's bound on them.
   */
  pageRows?<R>(query: CompiledQuery<R>): Promise<R[]>;
  /** A person's latest events (merges followed), among the project's newest `scan`. */
  personEvents(projectId: string, personId: string, limit: number, scan: number): Promise<StoredEvent[]>;
  /** The project's people (merged persons left out), counted from persons_newest alone, where page reads run. */
  countPersons(projectId: string): Promise<number>;
  /** Up to `limit` people newest first, after the cursor, each with up to `ids` of its distinct ids. */
  personPage(projectId: string, after: PersonCursor | null, limit: number, ids: number): Promise<PersonPageRow[]>;
  /** A project's distinct ids that start with `prefix`, in byte order, with their persons (a keystroke at a time). */
  searchDistinctIds?(projectId: string, prefix: string, limit: number): Promise<{ distinct_id: string; person_id: string }[]>;
}

/**
 * What an engine gives the queries written once: a Kysely instance over its
 * own connection (its dialect, its error mapping) and the few pieces of SQL
 * that differ between engines. Each is a small function, never a copy of a query.
 */
export interface SqlEngine {
  /**
   * Queries and transactions. A transaction is isolated from every other
   * writer of the database, on any server or process: SQLite begins it
   * IMMEDIATE (the file's write lock first), PostgreSQL locks what it reads
   * where `rowLocks` says so.
   */
  readonly db: Kysely<Database>;
  /** True where a transaction's reads must lock their rows (FOR UPDATE); SQLite's IMMEDIATE already holds the file. */
  readonly rowLocks: boolean;
  /**
   * Text in the order of its bytes, as the port lists names and ids on every
   * engine (COLLATE "C" on PostgreSQL; SQLite compares bytes already).
   */
  bytewise(column: string): Expression<string>;
  /** A JSON column as its text (schema.ts's Json), to be parsed once by the caller. */
  jsonText(column: string): AliasableExpression<string>;
  /** The column's text starts with `prefix`, in a form the engine reads as a range of its index. */
  startsWith(column: string, prefix: string): Expression<SqlBool>;
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
  /** A list of ids as a column holds it (pending_erasures.person_ids: JSON text on SQLite, text[] on PostgreSQL), and back. */
  idList(ids: string[]): string | string[];
  idsOf(column: string | string[]): string[];
}

/** Runs a write in its turn (Engine.write). */
export type WriteTurn = <T>(fn: () => Promise<T>) => Promise<T>;

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
