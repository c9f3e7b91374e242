import { EventEmitter } from 'node:events';
import { copyFileSync } from 'node:fs';
import { afterAll, afterEach } from 'vitest';
import type { CheckpointThread } from '../../src/stores/sqlite/checkpointer.js';
import { type Db, openSqlite, sqliteFile } from '../../src/stores/sqlite/open.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { tempDir } from './fixture.js';

/**
 * A data directory for one test file's SQLite tests: `open()` opens a
 * connection to its database (each call a new one), and after every test all
 * of them are closed and the directory removed.
 */
export function sqliteTestDir(prefix: string): { dir: string; open: () => Db } {
  const tmp = tempDir(prefix);
  const opened: Db[] = [];
  afterEach(() => {
    for (const db of opened.splice(0)) if (db.open) db.close();
    tmp.remove();
  });
  return {
    dir: tmp.dir,
    open: () => {
      const db = openSqlite(tmp.dir);
      opened.push(db);
      return db;
    },
  };
}

/**
 * Embedded stores for tests that need a store but no engine in particular
 * (the domain's own tests): `open()` makes a store on a fresh database in a
 * directory of its own, and after every test each one is closed and its
 * directory removed. `prepare` runs on the database before the store opens
 * it, to add what a test needs of it (a trigger that refuses some rows).
 *
 * A file, not `:memory:`: the store's checkpoint and page-read threads open
 * the database by its file name, and would each find an empty database of
 * their own. What made a store slow, and none of these tests is about, is
 * left out: each database is a copy of one migrated once per test file
 * (migrating took 25 to 35 ms a store, a copy 2); commits are not synced
 * to disk (synchronous=OFF: no test here survives a crash, and a sync took
 * about 10 ms a commit on a busy disk; the crash tests in test/process run
 * servers with the real setting); and the checkpoint thread is one that
 * never starts (idleThread; starting and stopping the real one took about
 * 75 ms a store).
 */
export function sqliteTestStores(prefix: string): { open: (prepare?: (db: Db) => void) => SqliteStore } {
  const opened: { store: SqliteStore; remove: () => void }[] = [];
  let migrated: { dir: string; remove: () => void } | null = null;
  afterEach(async () => {
    for (const o of opened.splice(0)) {
      await o.store.close();
      o.remove();
    }
  });
  afterAll(() => migrated?.remove());
  return {
    open: (prepare) => {
      if (migrated === null) {
        migrated = tempDir(prefix);
        const db = openSqlite(migrated.dir);
        // Everything in the one file, none of it left in a WAL beside it.
        db.pragma('wal_checkpoint(TRUNCATE)');
        db.close();
      }
      const tmp = tempDir(prefix);
      copyFileSync(sqliteFile(migrated.dir), sqliteFile(tmp.dir));
      const db = openSqlite(tmp.dir);
      try {
        prepare?.(db);
      } catch (e) {
        db.close();
        tmp.remove();
        throw e;
      }
      db.pragma('synchronous = OFF');
      const store = new SqliteStore(db, { checkpointThread: idleThread });
      opened.push({ store, remove: tmp.remove });
      return store;
    },
  };
}

/** A checkpoint thread that copies nothing back; it answers 'stop', so the store closes as usual. */
function idleThread(): CheckpointThread {
  const events = new EventEmitter();
  return Object.assign(events, {
    postMessage: (m: unknown) => {
      if (m === 'stop') events.emit('message', 'stopped');
    },
    unref: () => undefined,
    terminate: async () => {
      events.emit('exit', 0);
      return 0;
    },
  });
}
