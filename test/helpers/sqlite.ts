import { afterEach } from 'vitest';
import { type Db, openSqlite } from '../../src/stores/sqlite/open.js';
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
