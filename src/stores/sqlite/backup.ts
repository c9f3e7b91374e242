import { existsSync, statSync } from 'node:fs';
import type { Db } from './open.js';

/** Pages per backup step: all of them, in one step. */
const ALL_PAGES = 0x7fffffff;

/**
 * Copies the database into `toFile` with SQLite's online backup API, and
 * returns the copy's size. The copy is one snapshot: in WAL mode the step that
 * copies the pages holds a read transaction, which writers (servers, in this
 * process or others) never wait on. It is taken in one step rather than in
 * slices because a slice-by-slice backup starts over whenever another
 * connection commits in between, and under steady load would never end.
 */
export async function backupTo(db: Db, toFile: string): Promise<number> {
  if (existsSync(toFile)) throw new Error(`${toFile} already exists; give the backup a new file name.`);
  await db.backup(toFile, { progress: () => ALL_PAGES });
  return statSync(toFile).size;
}
