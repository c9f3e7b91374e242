import { CompiledQuery, type Kysely } from 'kysely';
import type { PersonPageRow } from '../port.js';
import type { PersonCursor } from '../port-console.js';
import type { Database } from '../sql/schema.js';

/** A page of people, newest first, after a cursor: a range on persons_newest, read backwards. */
export const PERSON_PAGE_SQL = `SELECT id, created_at FROM persons INDEXED BY persons_newest
  WHERE project_id = ? AND merged_into IS NULL AND (created_at, id) < (?, ?)
  ORDER BY created_at DESC, id DESC LIMIT ?`;

/** A person's first distinct ids, its merged persons' included: each read by its person (person_links_person, persons_merged_into; CROSS JOIN keeps the merged persons outermost). */
export const PERSON_IDS_SQL = `SELECT d FROM (
    SELECT distinct_id AS d FROM person_links INDEXED BY person_links_person WHERE project_id = ? AND person_id = ?
    UNION ALL
    SELECT l.distinct_id FROM persons m CROSS JOIN person_links l INDEXED BY person_links_person
    WHERE m.project_id = ? AND m.merged_into = ? AND l.project_id = m.project_id AND l.person_id = m.id
  ) ORDER BY d LIMIT ?`;

/**
 * The page of people, with INDEXED BY, which Kysely does not write: one
 * short read per person (a statement costs no round trip here). The other
 * reads SQLite does its own way are the engine's (sqlite-store.ts): pages of
 * events by its minute index (event-pages.ts), for it keeps no index on
 * events (each would cost the ingest path a random write per event); the
 * chart's outcome counts, a person's events and the count of people on the
 * page-read thread (page-reader.ts), off the connection that writes. The
 * search of distinct ids is the default, a short range on the connection
 * that writes, not queued behind the thread's slow reads.
 */
export async function personPage(db: Kysely<Database>, projectId: string, after: PersonCursor | null, limit: number, ids: number): Promise<PersonPageRow[]> {
  const page = await db.executeQuery<{ id: string; created_at: number }>(
    CompiledQuery.raw(PERSON_PAGE_SQL, [projectId, after?.createdAt ?? Number.MAX_SAFE_INTEGER, after?.id ?? '', limit]),
  );
  return Promise.all(page.rows.map(async (r) => {
    const found = await db.executeQuery<{ d: string }>(CompiledQuery.raw(PERSON_IDS_SQL, [projectId, r.id, projectId, r.id, ids]));
    return { id: r.id, createdAt: r.created_at, ids: found.rows.map((f) => f.d) };
  }));
}
