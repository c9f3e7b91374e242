import type { StoredEvent } from '../port.js';
import type { Statement } from 'better-sqlite3';
import type { Db } from './open.js';
import type { EventRow } from '../sql/event-pages.js';
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
  /** A person's newest events, its merged persons' included: a short range of events_person per person. */
  personEvents(projectId: string, personId: string, limit: number): StoredEvent[];
  /** How many people a project has (merged persons not counted): a count of persons_newest's range, read from the index alone. */
  countPersons(projectId: string): number;
}

/** The page reads over `db`, their statements prepared once. */
export function pageReadsOn(db: Db): PageReads {
  const kept = new Map<string, Statement>();
  const s = {
    merged: db.prepare('SELECT id FROM persons INDEXED BY persons_merged_into WHERE project_id = ? AND merged_into = ?').pluck(),
    ofPerson: db.prepare(
      `SELECT seq, id, event, distinct_id, anonymous_id, person_id, session_id, timestamp, received_at, insert_id, properties
       FROM events INDEXED BY events_person WHERE project_id = ? AND person_id = ?
       ORDER BY timestamp DESC, seq DESC LIMIT ?`,
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
    personEvents(projectId, personId, limit) {
      // Each person's own newest, then the newest of them all: a merge moves no event row.
      const ids = [personId, ...(s.merged.all(projectId, personId) as string[])];
      const rows = ids.flatMap((id) => s.ofPerson.all(projectId, id, limit) as EventRow[]);
      rows.sort((a, b) => b.timestamp - a.timestamp || b.seq - a.seq);
      return rows.slice(0, limit).map((r) => toStoredEvent({ ...r, person_id: personId }));
    },
    countPersons(projectId) {
      return s.countPersons.get(projectId) as number;
    },
  };
}
