import type { Statement } from 'better-sqlite3';
import type { Db } from './open.js';

/** Statements of `rows` kept prepared; a query's SQL depends on its shape only. */
const KEPT_STATEMENTS = 64;

/**
 * The console's reads that scan, as the page-read thread runs them on
 * its own connection (page-reader.ts): never on the connection that writes.
 */
export interface PageReads {
  /** A query written once (Kysely's SQL and parameters, as the engine's own connection would run it); its rows. */
  rows(text: string, params: unknown[]): unknown[];
  /** How many people a project has (merged persons not counted): a count of persons_newest's range, read from the index alone. */
  countPersons(projectId: string): number;
}

/** The page reads over `db`, their statements prepared once. */
export function pageReadsOn(db: Db): PageReads {
  const kept = new Map<string, Statement>();
  const s = {
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
    countPersons(projectId) {
      return s.countPersons.get(projectId) as number;
    },
  };
}
