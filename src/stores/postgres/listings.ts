import type pg from 'pg';
import type { Org, Project, Source, StoredEvent } from '../port.js';
import type { DayCount, ListingStore, PersonCursor, PersonListing } from '../port-console.js';
import { PageReadGate } from '../page-read-gate.js';
import { toOrg, toProject, toSource } from './admin.js';
import { unavailable } from './pool.js';

const DAY_MS = 86_400_000;

/** Distinct ids a listed person shows. */
const SHOWN_IDS = 3;

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
 * Page reads that scan events (the chart, a person's latest events) hold at
 * most this many of the pool's connections (10) at once, so slow ones never
 * take those the write path needs; a few more may wait, the rest are refused.
 */
const PAGE_READS_RUNNING = 2;
const PAGE_READS_WAITING = 8;

/** Lists and summaries for the console and the list commands, on PostgreSQL. */
export class PgListings implements ListingStore {
  readonly gate = new PageReadGate(PAGE_READS_RUNNING, PAGE_READS_WAITING);

  constructor(private readonly pool: pg.Pool) {}

  async listOrgs(): Promise<Org[]> {
    return (await this.rows<never>('SELECT * FROM orgs WHERE deleted_at IS NULL ORDER BY name COLLATE "C", id COLLATE "C"', [])).map(toOrg);
  }

  async listProjects(orgId: string | null): Promise<Project[]> {
    const rows = await this.rows<Parameters<typeof toProject>[0]>(
      `SELECT p.* FROM projects p JOIN orgs o ON o.id = p.org_id
       WHERE p.deleted_at IS NULL AND o.deleted_at IS NULL AND ($1::text IS NULL OR p.org_id = $1)
       ORDER BY p.name COLLATE "C", p.id COLLATE "C"`,
      [orgId],
    );
    return rows.map(toProject);
  }

  async listSources(projectId: string): Promise<Source[]> {
    const rows = await this.rows<never>(
      `SELECT s.* FROM sources s JOIN projects p ON p.id = s.project_id JOIN orgs o ON o.id = p.org_id
       WHERE s.project_id = $1 AND s.deleted_at IS NULL AND p.deleted_at IS NULL AND o.deleted_at IS NULL
       ORDER BY s.name COLLATE "C", s.id COLLATE "C"`,
      [projectId],
    );
    return rows.map(toSource);
  }

  async eventsPerDay(projectId: string, from: number, to: number): Promise<DayCount[]> {
    // Day partitions and events_project_time keep this to the days asked for.
    const rows = await this.gate.run(`eventsPerDay:${projectId}:${from}:${to}`, () => this.rows<{ day: number; n: number }>(
      `SELECT "timestamp" / ${DAY_MS} AS day, count(*)::bigint AS n FROM events
       WHERE project_id = $1 AND "timestamp" >= $2 AND "timestamp" < $3 GROUP BY 1 ORDER BY 1`,
      [projectId, from, to],
    ));
    return rows.map((r) => ({ day: new Date(Number(r.day) * DAY_MS).toISOString().slice(0, 10), events: Number(r.n) }));
  }

  async searchDistinctIds(projectId: string, prefix: string, limit: number): Promise<{ distinctId: string; personId: string }[]> {
    const rows = await this.rows<{ distinct_id: string; person_id: string }>(
      `SELECT l.distinct_id, coalesce(p.merged_into, l.person_id) AS person_id
       FROM person_links l LEFT JOIN persons p ON p.project_id = l.project_id AND p.id = l.person_id
       WHERE l.project_id = $1 AND starts_with(l.distinct_id, $2) ORDER BY l.distinct_id COLLATE "C" LIMIT $3`,
      [projectId, prefix, limit],
    );
    return rows.map((r) => ({ distinctId: r.distinct_id, personId: r.person_id }));
  }

  async listPersons(projectId: string, limit: number, after: PersonCursor | null): Promise<{ persons: PersonListing[]; next: PersonCursor | null }> {
    // One more than asked tells whether a next page exists.
    const rows = await this.rows<{ id: string; created_at: string; ids: string[] }>(PERSON_PAGE_SQL, [projectId, after?.createdAt ?? Number.MAX_SAFE_INTEGER, after?.id ?? '', limit + 1, SHOWN_IDS + 1]);
    const page = rows.slice(0, limit);
    const persons = page.map((r) => ({ id: r.id, createdAt: Number(r.created_at), distinctIds: r.ids.slice(0, SHOWN_IDS), moreIds: r.ids.length > SHOWN_IDS }));
    const last = persons.at(-1);
    return { persons, next: rows.length > limit && last !== undefined ? { createdAt: last.createdAt, id: last.id } : null };
  }

  async personEvents(projectId: string, personId: string, limit: number, scan: number): Promise<StoredEvent[]> {
    // Rows come out in the port's shape, as the store's listEvents returns them.
    return this.gate.run(`personEvents:${projectId}:${personId}:${limit}:${scan}`, () => this.rows<StoredEvent>(
      `SELECT e.id, e.event, e.distinct_id AS "distinctId", e.anonymous_id AS "anonymousId",
         coalesce(p.merged_into, e.person_id) AS "personId", e.session_id AS "sessionId", e."timestamp",
         e.received_at AS "receivedAt", e.insert_id AS "insertId", e.properties
       FROM (SELECT * FROM events WHERE project_id = $1 ORDER BY "timestamp" DESC LIMIT $4) e
       LEFT JOIN persons p ON p.project_id = e.project_id AND p.id = e.person_id
       WHERE coalesce(p.merged_into, e.person_id) = $2
       ORDER BY e."timestamp" DESC, e.seq DESC LIMIT $3`,
      [projectId, personId, limit, scan],
    ));
  }

  private async rows<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    try {
      return (await this.pool.query<R>(text, values)).rows;
    } catch (e) {
      throw unavailable(e);
    }
  }
}
