import type { Kysely } from 'kysely';
import type { SqlEngine } from '../port.js';
import type { Database } from './schema.js';

// Named here too for delivery's files (sql/destinations.ts, */destinations.ts), which are reshaped on their own.
export type { SqlEngine } from '../port.js';

/** Runs a write in its turn (Engine.write, without a transaction of its own). */
export type WriteTurn = <T>(fn: () => Promise<T>) => Promise<T>;

/** The turn of an engine whose writers run at once. */
export const atOnce: WriteTurn = (fn) => fn();

/** A store written once: the engine's queries, and its turn for every write. */
export abstract class SqlStorePart {
  protected readonly db: Kysely<Database>;

  constructor(
    protected readonly engine: SqlEngine,
    /** The engine's turn for writes (Engine.write). */
    protected readonly write: WriteTurn = atOnce,
  ) {
    this.db = engine.db;
  }
}
