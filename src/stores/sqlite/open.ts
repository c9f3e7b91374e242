import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { renderMigration } from '../sql/shared-migration.js';
import { DECLARED_SCHEMA } from '../sql/declared-schema.js';
import { SQLITE_MIGRATIONS } from './migrations.js';
import { SQLITE_OWN_SCHEMA } from './schema.js';

export type Db = Database.Database;

/**
 * Page cache of each connection openSqlite opens, in KiB; it fills only as
 * pages are read. (The checkpoint thread keeps the build's default: it
 * copies WAL frames, it does not read pages back.)
 */
const PAGE_CACHE_KIB = 16_384;

/** The embedded database's file in `dataDir`. */
export function sqliteFile(dataDir: string): string {
  return join(dataDir, 'inlet.db');
}

/** Whether `dataDir` holds an embedded database; looks without creating anything. */
export function hasSqliteStore(dataDir: string): boolean {
  return existsSync(sqliteFile(dataDir));
}

/** Opens (creating if needed) the embedded database in `dataDir` and brings its schema up to date. */
export function openSqlite(dataDir: string): Db {
  mkdirSync(dataDir, { recursive: true });
  const db = new Database(sqliteFile(dataDir));
  // WAL lets the admin command and the server read while one writes;
  // synchronous=FULL makes every commit survive power loss, which is what a
  // 202 promises.
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  // The admin command and the server write the same file; a short wait beats
  // failing a write that overlaps another process's commit.
  db.pragma('busy_timeout = 5000');
  migrate(db);
  // temp_store stays at the build's default (a file, written only once a
  // temporary table or sort outgrows its cache), so a large sort or
  // migration spills to disk rather than growing memory.
  //
  // better-sqlite3 builds SQLite with a page cache of 16,000 KiB per
  // connection (SQLite's own default is 2,000 KiB); this pins it whatever the
  // build. A commit of 500 events reads back pages it had just written (the
  // minute index reads the newest events) and the person pages of the commit
  // before: with a 2,000 KiB cache about 1.4 reads a stored event, with
  // 16 MiB about 0.25, most of them the checkpoint's own (docs/design.md,
  // "What the embedded store keeps, and why").
  db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
  return db;
}

/**
 * Brings the schema up to date: a new database is made from the declared
 * schema at the current version (every version recorded), an older one
 * takes the steps of the history it lacks. `history` makes a new one take
 * every step instead, for the test that requires both paths to end at the
 * same schema.
 */
export function migrate(db: Db, fresh: 'declared' | 'history' = 'declared'): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
  // IMMEDIATE takes the write lock first, so two processes starting at once
  // do not both apply the same migration.
  db.exec('BEGIN IMMEDIATE');
  try {
    const row = db.prepare('SELECT max(version) AS v FROM schema_migrations').get() as { v: number | null };
    // A newer Inlet has changed the file in ways this one does not know; writing
    // to it could break them (an older server would not find insert_ids stored the newer way).
    if ((row.v ?? 0) > SQLITE_MIGRATIONS.length) {
      throw new Error(
        `The data directory was last opened by a newer Inlet (schema version ${row.v}; this one knows up to ${SQLITE_MIGRATIONS.length}). Run that version, or a newer one.`,
      );
    }
    const record = db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)');
    let applied = row.v ?? 0;
    if (row.v === null && fresh === 'declared') {
      db.exec(renderMigration(DECLARED_SCHEMA, 'sqlite'));
      db.exec(SQLITE_OWN_SCHEMA);
      for (let v = 1; v <= SQLITE_MIGRATIONS.length; v++) record.run(v, Date.now());
      applied = SQLITE_MIGRATIONS.length;
    }
    for (let v = applied + 1; v <= SQLITE_MIGRATIONS.length; v++) {
      const step = SQLITE_MIGRATIONS[v - 1]!;
      if (typeof step === 'string') db.exec(step);
      else if (typeof step === 'function') step(db);
      else db.exec(renderMigration(step, 'sqlite'));
      record.run(v, Date.now());
    }
    db.exec('COMMIT');
  } catch (e) {
    db.exec('ROLLBACK');
    throw e;
  }
}
