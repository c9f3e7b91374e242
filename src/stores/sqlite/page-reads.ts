import type { EventRow, StoredEvent } from '../port.js';
import type { Statement } from 'better-sqlite3';
import type { Db } from './open.js';
import { toStoredEvent } from '../sql/rows.js';

/** Statements of `rows` kept prepared; a query's SQL depends on its shape only. */
const KEPT_STATEMENTS = 64;

/**
 * The console's reads that scan, as the page-read thread runs them on
 * its own connection (page-reader.ts): never on the connection that writes.
 */
export interface PageReads {
  /** A query written once (Kysely's SQL and parameters, as the engine's own connection would run it); its rows. */
  rows(text: string, params: unknown[]): unknown[];
  /** A person's newest events, its merged persons' included, looked for among the `scan` most recently stored. */
  personEvents(projectId: string, personId: string, limit: number, scan: number): StoredEvent[];
  /** How many people a project has (merged persons not counted): a count of persons_newest's range, read from the index alone. */
  countPersons(projectId: string): number;
}

/** The page reads over `db`, their statements prepared once. */
export function pageReadsOn(db: Db): PageReads {
  const kept = new Map<string, Statement>();
  const s = {
    personEvents: db.prepare(
      `SELECT e.seq, e.id, e.event, e.distinct_id, e.anonymous_id, coalesce(p.merged_into, e.person_id) AS person_id,
         e.session_id, e.timestamp, e.received_at, e.insert_id, e.properties
       FROM (SELECT * FROM events ORDER BY seq DESC LIMIT ?) e
       LEFT JOIN persons p ON p.project_id = e.project_id AND p.id = e.person_id
       WHERE e.project_id = ? AND coalesce(p.merged_into, e.person_id) = ?
       ORDER BY e.timestamp DESC, e.seq DESC LIMIT ?`,
    ),
    countPersons: db.prepare('SELECT count(*) FROM persons INDEXED BY persons_newest WHERE project_id = ? AND merged_into IS NULL').pluck(),
  };
  return {
    rows(text, params) {
      let statement = kept.get(text);
      if (statement === undefined) {
        if (kept.size >= KEPT_STATEMENTS) kept.clear();
        kept.set(text, (statement = db.prepare(text)));
      }
      return statement.all(params);
    },
    personEvents(projectId, personId, limit, scan) {
      return (s.personEvents.all(scan, projectId, personId, limit) as EventRow[]).map(toStoredEvent);
    },
    countPersons(projectId) {
      return s.countPersons.get(projectId) as number;
    },
  };
}
