import Database from 'better-sqlite3';
import { type Driver, Kysely, SqliteDialect, type SqliteDatabase, type SqliteDialectConfig, SqliteDriver, type SqliteStatement, sql } from 'kysely';
import type { SqlEngine } from '../port.js';
import { SQLITE_DIALECT } from '../sql/dialects.js';
import type { Database as Tables } from '../sql/schema.js';
import type { Db } from './open.js';
import { storeError } from './store-error.js';

/** Statements kept prepared; a query's SQL depends on its shape only (the lengths of its lists). */
const KEPT_STATEMENTS = 256;

/** SQLite binds no booleans: a yes/no column is INTEGER 0/1 (schema.ts's Flag). */
export const bindable = (params: ReadonlyArray<unknown>): unknown[] => params.map((p) => (p === true ? 1 : p === false ? 0 : p));

/** The store's connection as Kysely's driver sees it: statements kept prepared, booleans bound as 0/1, SQLite's failures as the port's error. */
function connectionOf(db: Db): SqliteDatabase {
  const kept = new Map<string, SqliteStatement>();
  const run = <T>(fn: () => T): T => {
    try {
      return fn();
    } catch (e) {
      throw storeError(e);
    }
  };
  return {
    // The store closes its connection itself.
    close: () => undefined,
    prepare(text) {
      const found = kept.get(text);
      if (found !== undefined) return found;
      const s = run(() => db.prepare(text));
      const statement: SqliteStatement = {
        reader: s.reader,
        all: (p) => run(() => s.all(bindable(p))),
        run: (p) => run(() => s.run(bindable(p))),
        iterate: (p) => run(() => s.iterate(bindable(p))),
      };
      if (kept.size >= KEPT_STATEMENTS) kept.clear();
      kept.set(text, statement);
      return statement;
    },
  };
}

/** How long a transaction waits for another connection's write to end, as the connection's busy_timeout (open.ts). */
const BEGIN_WAIT_MS = 5000;
/** The longest pause between two tries of BEGIN IMMEDIATE. */
const BEGIN_PAUSE_MS = 20;

/**
 * Transactions begin IMMEDIATE: the file's write lock is taken before the
 * first read, so another process cannot write between a transaction's read
 * and its write (a sign-in count, a key count), and a read never has to be
 * upgraded to a write that finds the file busy. The lock is waited for
 * between tries, not in SQLite's busy handler: a Kysely transaction awaits
 * between its statements, and the handler would hold the thread that another
 * connection of this process needs to finish its own transaction.
 */
class ImmediateDriver extends SqliteDriver {
  constructor(
    config: SqliteDialectConfig,
    private readonly db: Db,
  ) {
    super(config);
  }

  override async beginTransaction(): Promise<void> {
    const deadline = Date.now() + BEGIN_WAIT_MS;
    for (let pause = 1; ; pause = Math.min(pause * 2, BEGIN_PAUSE_MS)) {
      const timeout = this.db.pragma('busy_timeout', { simple: true }) as number;
      this.db.pragma('busy_timeout = 0');
      try {
        this.db.exec('BEGIN IMMEDIATE');
        return;
      } catch (e) {
        if (!(e instanceof Database.SqliteError && e.code === 'SQLITE_BUSY') || Date.now() >= deadline) throw storeError(e);
      } finally {
        this.db.pragma(`busy_timeout = ${timeout}`);
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }

  /** SQLite has already rolled back after some failures (a full disk): a second ROLLBACK would hide the first error behind its own. */
  override async rollbackTransaction(): Promise<void> {
    try {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
    } catch (e) {
      throw storeError(e);
    }
  }
}

class ImmediateDialect extends SqliteDialect {
  constructor(private readonly db: Db) {
    super({ database: connectionOf(db) });
  }

  override createDriver(): Driver {
    return new ImmediateDriver({ database: connectionOf(this.db) }, this.db);
  }
}

/**
 * The queries written once (src/stores/sql) over the store's connection. Its
 * writes must run in the store's turn (sqlite-store.ts), as every write on
 * the connection does; a Kysely query there is safe because better-sqlite3
 * runs each statement to its end before returning.
 */
export function sqliteEngine(db: Db): SqlEngine {
  return {
    dialect: SQLITE_DIALECT,
    db: new Kysely<Tables>({ dialect: new ImmediateDialect(db) }),
    // Writers take turns on the whole file.
    lockProjects: async () => undefined,
    // Every process on one file runs on one machine, under one clock.
    clock: () => sql.val(Date.now()),
    newestArrival: () => sql<number>`(SELECT coalesce(max(seq), 0) FROM events)`,
  };
}
