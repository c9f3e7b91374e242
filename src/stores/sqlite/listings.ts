import type { Org, Project, Source, StoredEvent } from '../port.js';
import type { DayCount, ListingStore } from '../port-console.js';
import { toOrg, toProject, toSource } from './admin.js';
import type { Db } from './open.js';
import type { SqlitePageReader } from './page-reader.js';

/** Lists and summaries for the console and the list commands, on SQLite. */
export class SqliteListings implements ListingStore {
  constructor(
    private readonly db: Db,
    /** Reads that scan events, on a thread of their own. */
    private readonly reader: SqlitePageReader,
    /** Runs a write in its turn with the store's transactions, so it never lands inside one. */
    private readonly write: <T>(fn: () => T) => Promise<T> = async (fn) => fn(),
  ) {}

  async listOrgs(): Promise<Org[]> {
    const rows = this.db.prepare('SELECT * FROM orgs WHERE deleted_at IS NULL ORDER BY name, id').all() as never[];
    return rows.map(toOrg);
  }

  async listProjects(orgId: string | null): Promise<Project[]> {
    const rows = this.db
      .prepare(
        `SELECT p.* FROM projects p JOIN orgs o ON o.id = p.org_id
         WHERE p.deleted_at IS NULL AND o.deleted_at IS NULL AND (@org IS NULL OR p.org_id = @org) ORDER BY p.name, p.id`,
      )
      .all({ org: orgId }) as Parameters<typeof toProject>[0][];
    return rows.map(toProject);
  }

  async listSources(projectId: string): Promise<Source[]> {
    const rows = this.db
      .prepare(
        `SELECT s.* FROM sources s JOIN projects p ON p.id = s.project_id JOIN orgs o ON o.id = p.org_id
         WHERE s.project_id = ? AND s.deleted_at IS NULL AND p.deleted_at IS NULL AND o.deleted_at IS NULL ORDER BY s.name, s.id`,
      )
      .all(projectId) as never[];
    return rows.map(toSource);
  }

  /** On the page-read thread (page-reader.ts), off the connection that writes. */
  eventsPerDay(projectId: string, from: number, to: number): Promise<DayCount[]> {
    return this.reader.eventsPerDay(projectId, from, to);
  }

  async searchDistinctIds(projectId: string, prefix: string, limit: number): Promise<{ distinctId: string; personId: string }[]> {
    // A range on the primary key: a prefix search reads only what it returns.
    const rows = this.db
      .prepare(
        `SELECT l.distinct_id, coalesce(p.merged_into, l.person_id) AS person_id
         FROM person_links l LEFT JOIN persons p ON p.project_id = l.project_id AND p.id = l.person_id
         WHERE l.project_id = ? AND l.distinct_id >= ? AND l.distinct_id < ? ORDER BY l.distinct_id LIMIT ?`,
      )
      .all(projectId, prefix, `${prefix}\u{10FFFF}`, limit) as { distinct_id: string; person_id: string }[];
    return rows.map((r) => ({ distinctId: r.distinct_id, personId: r.person_id }));
  }

  /** On the page-read thread, as eventsPerDay. */
  personEvents(projectId: string, personId: string, limit: number, scan: number): Promise<StoredEvent[]> {
    return this.reader.personEvents(projectId, personId, limit, scan);
  }
}
