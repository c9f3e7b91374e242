import Database from 'better-sqlite3';
import { StoreUnavailableError } from '../port.js';

/**
 * SQLite's own failures as the port's error: a constraint or a value SQLite
 * cannot keep is a refusal of what was written; anything else from SQLite
 * (a full disk, an I/O error, a busy file) means the store failed. Errors of
 * the caller's code pass through.
 */
export function storeError(e: unknown): unknown {
  if (!(e instanceof Database.SqliteError)) return e;
  const refused = /^SQLITE_(CONSTRAINT|MISMATCH|TOOBIG|RANGE)/.test(e.code);
  return new StoreUnavailableError('The embedded store could not write.', { cause: e, refused });
}
