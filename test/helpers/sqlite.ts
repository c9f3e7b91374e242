import { EventEmitter } from 'node:events';
import { afterEach } from 'vitest';
import type { CheckpointThread } from '../../src/stores/sqlite/checkpointer.js';
import { type Db, openSqlite } from '../../src/stores/sqlite/open.js';
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
 * their own. The checkpoint thread is one that never starts (idleThread):
 * these tests write a few rows a store, and starting and stopping the real
 * thread took about 100 ms a store, five times the rest of its life.
 */
export function sqliteTestStores(prefix: string): { open: (prepare?: (db: Db) => void) => SqliteStore } {
  const opened: { store: SqliteStore; remove: () => void }[] = [];
  afterEach(async () => {
    for (const o of opened.splice(0)) {
      await o.store.close();
      o.remove();
    }
  });
  return {
    open: (prepare) => {
      const tmp = tempDir(prefix);
      const db = openSqlite(tmp.dir);
      try {
        prepare?.(db);
      } catch (e) {
        db.close();
        tmp.remove();
        throw e;
      }
      const store = new SqliteStore(db, { checkpointThread: idleThread });
      opened.push({ store, remove: tmp.remove });
      return store;
    },
  };
}

/**
 * A checkpoint thread that copies nothing back; it answers 'stop', so the
 * store closes as usual. The store uses only the members CheckpointThread
 * names, and none of their return values but terminate's: an emitter with
 * those stands in for the Worker the type is cut from.
 */
function idleThread(): CheckpointThread {
  const events = new EventEmitter();
  const thread = Object.assign(events, {
    postMessage: (m: unknown) => {
      if (m === 'stop') events.emit('message', 'stopped');
    },
    unref: () => undefined,
    terminate: async () => {
      events.emit('exit', 0);
      return 0;
    },
  });
  return thread as unknown as CheckpointThread;
}
