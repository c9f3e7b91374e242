import Database from 'better-sqlite3';
import { atOnce, type WriteTurn } from '../sql/engine.js';
import type { DestinationsEngine } from '../sql/destinations.js';
import type { Db } from './open.js';
import { sqliteEngine } from './sql-engine.js';

/**
 * Destinations on SQLite. Delivery reads on a read-only connection of its
 * own, opened at its first read: the store's connection may be inside an
 * ingest transaction (its function awaits between statements), and a read
 * there would see rows that are not committed yet, and may never be. Each
 * read is one statement over a range of seqs (the rowid), so it holds a
 * snapshot only for as long as it runs.
 *
 * Positions: one writer at a time on the whole file, each taking seqs above
 * every seq taken before, so every seq up to the newest is committed, or gone.
 */
export function sqliteDestinations(db: Db, write: WriteTurn): DestinationsEngine {
  let reader: Db | null = null;
  const open = (): Db => {
    if (reader !== null) return reader;
    reader = new Database(db.name, { readonly: true, fileMustExist: true });
    // Reads run on the thread that answers requests: a reader that finds the WAL being reset
    // fails at once rather than waiting there, and the delivery reads again a moment later.
    reader.pragma('busy_timeout = 0');
    return reader;
  };
  let engine: ReturnType<typeof sqliteEngine> | null = null;
  const reads = () => (engine ??= sqliteEngine(open()));
  const stmt = (text: string) => open().prepare(text);
  let s: { newest: Database.Statement; lo: Database.Statement; atOrAfter: Database.Statement } | null = null;
  const statements = () =>
    (s ??= {
      newest: stmt('SELECT max(seq) FROM events').pluck(),
      lo: stmt('SELECT min(seq) FROM events').pluck(),
      // Placeholders of deleted events (event-deletion.ts) have no time: the search steps over them.
      atOrAfter: stmt("SELECT seq, received_at FROM events WHERE seq >= ? AND source_id <> '' ORDER BY seq LIMIT 1"),
    });
  return {
    get reads() {
      return reads();
    },
    write,
    bound: atOnce,
    now: async () => Date.now(),
    head: async () => (statements().newest.get() as number | null) ?? 0,
    async positionBefore(_projectId, at) {
      // Seqs follow arrival, closely enough: a binary search for the first event received at `at` or later.
      const q = statements();
      const newest = (q.newest.get() as number | null) ?? 0;
      let lo = (q.lo.get() as number | null) ?? 0;
      let hi = newest + 1;
      while (lo < hi) {
        const mid = Math.floor((lo + hi) / 2);
        const row = q.atOrAfter.get(mid) as { seq: number; received_at: number } | undefined;
        if (row === undefined || row.received_at >= at) hi = mid;
        else lo = row.seq + 1;
      }
      return Math.min(lo, newest + 1) - 1;
    },
    async close() {
      reader?.close();
      reader = null;
      engine = null;
      s = null;
    },
  };
}
