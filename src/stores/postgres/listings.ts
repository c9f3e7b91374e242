import type pg from 'pg';
import type { Org, Project, Source, StoredEvent } from '../port.js';
import type { DayCount, ListingStore } from '../port-console.js';
import { PageReadGate } from '../page-read-gate.js';
import { toOrg, toProject, toSource } from './admin.js';
import { unavailable } from './pool.js';

const DAY_MS = 86_400_000;

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
