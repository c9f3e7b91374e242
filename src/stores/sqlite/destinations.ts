import Database from 'better-sqlite3';
import type { DeliveryEvent, DeliveryReads } from '../port-destinations.js';
import type { DestinationsEngine } from '../port.js';
import type { Tuning } from '../sql/defaults.js';
import { deliveryReads } from '../sql/destinations.js';
import { type Db, sqliteFile } from './open.js';
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
/** A row of the read past a cursor, in the statement's column order. */
type PastRow = [number, string, string, string, string, string | null, string, string | null, number, number, string | null, string];

/** Delivery's part of SQLite, its own read past a cursor, and the end of its read connection, which the store closes with its own. */
export function sqliteDestinations(db: Db, given: Db | null = null): DestinationsEngine & Pick<Tuning, 'readPast'> & { close(): void } {
  let reader: Db | null = given;
  const open = (): Db => {
    if (reader !== null) return reader;
    reader = new Database(db.name, { readonly: true, fileMustExist: true });
    // Reads run on the thread that answers requests: a reader that finds the WAL being reset
    // fails at once rather than waiting there, and the delivery reads again a moment later.
    reader.pragma('busy_timeout = 0');
    return reader;
  };
  const stmt = (text: string) => open().prepare(text);
  let s: { newest: Database.Statement; lo: Database.Statement; atOrAfter: Database.Statement; past: Database.Statement } | null = null;
  const statements = () =>
    (s ??= {
      newest: stmt('SELECT max(seq) FROM events').pluck(),
      lo: stmt('SELECT min(seq) FROM events').pluck(),
      // Placeholders of deleted events (event-deletion.ts) have no time: the search steps over them.
      atOrAfter: stmt("SELECT seq, received_at FROM events WHERE seq >= ? AND source_id <> '' ORDER BY seq LIMIT 1"),
      // Named, as the planner (without statistics) would search all persons by their key instead (sql/persons-merged-step.ts).
      // Rows as arrays: better-sqlite3 builds an object per row at about twice the cost, and every delivered event passes here.
      past: stmt(
        `SELECT e.seq, e.id, e.source_id, e.event, e.distinct_id, e.anonymous_id, coalesce(p.merged_into, e.person_id), e.session_id,
                e.timestamp, e.received_at, e.insert_id, e.properties
         FROM events e LEFT JOIN persons p INDEXED BY persons_merged ON p.project_id = e.project_id AND p.id = e.person_id AND p.merged_into IS NOT NULL
         WHERE e.project_id = ? AND e.seq > ? AND e.seq <= ? ORDER BY e.seq LIMIT ?`,
      ).raw(true),
    });
  return {
    head: async () => (statements().newest.get() as number | null) ?? 0,
    async readPast(projectId, after, upTo, limit) {
      const rows = statements().past.all(projectId, after, upTo, limit) as PastRow[];
      return rows.map(
        (r): DeliveryEvent => ({
          seq: r[0], id: r[1], sourceId: r[2], event: r[3], distinctId: r[4], anonymousId: r[5], personId: r[6], sessionId: r[7],
          timestamp: r[8], receivedAt: r[9], insertId: r[10], properties: r[11],
        }),
      );
    },
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
    close() {
      if (given === null) reader?.close();
      reader = null;
      s = null;
    },
  };
}

/**
 * Delivery's reads in the delivery process: a read-only connection of its
 * own, which may wait for a WAL reset there (no request waits behind it).
 */
export function sqliteDeliveryReads(dataDir: string): DeliveryReads {
  const db = new Database(sqliteFile(dataDir), { readonly: true, fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  const destinations = sqliteDestinations(db, db);
  return deliveryReads(sqliteEngine(db), destinations, destinations, async () => {
    db.close();
  });
}
