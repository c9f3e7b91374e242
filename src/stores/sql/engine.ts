import type { DestinationsEngine } from './destinations.js';
import type { AliasableExpression, Expression, Kysely, SqlBool } from 'kysely';
import type { Engine } from '../port.js';
import type { EngineEventPages } from './event-pages.js';
import type { EngineListingReads } from './listings.js';
import type { Database } from './schema.js';

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

/**
 * An engine's handle for the queries written once (Engine.data): its
 * queries and dialect, its write transactions off the ingest path, and the
 * reads it shapes to its own indexes.
 */
export interface EngineData {
  readonly sql: SqlEngine;
  /**
   * Runs `fn`, a write off the ingest path that opens its own transaction if
   * it needs one, in its turn with the engine's other writes: SQLite runs
   * them one at a time on its one connection, so that none lands inside an
   * ingest transaction (and learns there what they may have changed: keys,
   * links); PostgreSQL runs them at once.
   */
  write: WriteTurn;
  /**
   * Runs `fn` in one write transaction of the store, in its turn with the
   * ingest transactions (on SQLite the same queue, whose caches of links and
   * insert_ids learn what each transaction did).
   */
  writeTransaction<T>(fn: (db: Kysely<Database>) => Promise<T>): Promise<T>;
  readonly eventPages: EngineEventPages;
  readonly listingReads: EngineListingReads;
  /** Delivery's reads and positions, the engine's own way (sql/destinations.ts). */
  readonly destinations: DestinationsEngine;
}

/** An engine of the SQL data layer: what sqlStore builds a Store from. */
export type SqlStoreEngine = Engine<EngineData>;

/**
 * Runs a write in its turn: SQLite runs the store's writes one at a time on its
 * one connection (a write never lands inside an ingest transaction);
 * PostgreSQL runs them at once.
 */
export type WriteTurn = <T>(fn: () => Promise<T>) => Promise<T>;

/** The turn of an engine whose writers run at once. */
export const atOnce: WriteTurn = (fn) => fn();

/** A store written once: the engine's queries, and its turn for every write. */
export abstract class SqlStorePart {
  protected readonly db: Kysely<Database>;

  constructor(
    protected readonly engine: SqlEngine,
    /** The engine's turn for writes (EngineData.write). */
    protected readonly write: WriteTurn = atOnce,
  ) {
    this.db = engine.db;
  }
}
