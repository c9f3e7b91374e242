import { CompiledQuery, type Kysely } from 'kysely';
import type { PersonPageRow, SqlEngine } from '../port.js';
import type { PersonCursor } from '../port-console.js';
import { PageReadGate } from '../page-read-gate.js';
import type { TunedReads } from '../sql/defaults.js';
import { distinctIdSearch } from '../sql/listings.js';
import type { Database } from '../sql/schema.js';

/**
 * A page of people, newest first, after a cursor: a range on persons_newest
 * read backwards, then each person's first distinct ids (its merged persons'
 * included) through person_links_person and persons_merged_into.
 */
export const PERSON_PAGE_SQL = `SELECT p.id, p.created_at, coalesce(x.ids, '{}') AS ids
  FROM (SELECT id, created_at FROM persons
        WHERE project_id = $1 AND merged_into IS NULL AND (created_at, id COLLATE "C") < ($2::bigint, $3::text COLLATE "C")
        ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $4) p
  CROSS JOIN LATERAL (
    SELECT array_agg(d ORDER BY d COLLATE "C") AS ids FROM (
      SELECT d FROM (
        (SELECT l.distinct_id AS d FROM person_links l WHERE l.project_id = $1 AND l.person_id = p.id ORDER BY l.distinct_id COLLATE "C" LIMIT $5)
        UNION ALL
        (SELECT l.distinct_id FROM persons m JOIN person_links l ON l.project_id = m.project_id AND l.person_id = m.id
         WHERE m.project_id = $1 AND m.merged_into = p.id ORDER BY l.distinct_id COLLATE "C" LIMIT $5)
      ) u ORDER BY d COLLATE "C" LIMIT $5) f
  ) x
  ORDER BY p.created_at DESC, p.id COLLATE "C" DESC`;

/**
 * Page reads that scan (the chart's outcome counts, a person's latest events), and the
 * search of distinct ids a keystroke at a time, hold at
 * most this many of the pool's connections (10) at once, so slow ones never
 * take those the write path needs; a few more may wait, the rest are refused.
 */
const PAGE_READS_RUNNING = 2;
const PAGE_READS_WAITING = 8;

/**
 * The listing reads PostgreSQL does its own way: those that scan behind a
 * gate, and the page of people in one round trip (a LATERAL join
 * and array_agg, which Kysely would only wrap as raw SQL). All run through
 * the engine's Kysely instance, so failures are mapped there (sql-engine.ts).
 */
export class PgListingReads implements Pick<TunedReads, 'pageRows' | 'personPage' | 'searchDistinctIds'> {
  readonly gate = new PageReadGate(PAGE_READS_RUNNING, PAGE_READS_WAITING);

  private readonly db: Kysely<Database>;

  constructor(private readonly engine: SqlEngine) {
    this.db = engine.db;
  }

  async pageRows<R>(query: CompiledQuery<R>): Promise<R[]> {
    return this.gate.run(JSON.stringify([query.sql, query.parameters]), async () => (await this.db.executeQuery(query)).rows);
  }

  async personPage(projectId: string, after: PersonCursor | null, limit: number, ids: number): Promise<PersonPageRow[]> {
    const rows = await this.rows<{ id: string; created_at: number; ids: string[] }>(
      PERSON_PAGE_SQL,
      [projectId, after?.createdAt ?? Number.MAX_SAFE_INTEGER, after?.id ?? '', limit, ids],
    );
    return rows.map((r) => ({ id: r.id, createdAt: r.created_at, ids: r.ids }));
  }

  searchDistinctIds(projectId: string, prefix: string, limit: number): Promise<{ distinct_id: string; person_id: string }[]> {
    return this.gate.run(`searchDistinctIds:${projectId}:${prefix}:${limit}`, () => distinctIdSearch(this.engine, projectId, prefix, limit).execute());
  }

  private async rows<R>(text: string, values: unknown[]): Promise<R[]> {
    return (await this.db.executeQuery<R>(CompiledQuery.raw(text, values))).rows;
  }
}
