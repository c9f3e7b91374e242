import type { Org, Project, Source, StoredEvent } from '../port.js';
import type { DayCount, ListingStore, PersonCursor, PersonListing } from '../port-console.js';
import { toOrg, toProject, toSource } from './admin.js';
import type { Db } from './open.js';
import type { SqlitePageReader } from './page-reader.js';

/** Distinct ids a listed person shows. */
const SHOWN_IDS = 3;

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

  async listPersons(projectId: string, limit: number, after: PersonCursor | null): Promise<{ persons: PersonListing[]; next: PersonCursor | null }> {
    // One more than asked tells whether a next page exists.
    const rows = this.db.prepare(PERSON_PAGE_SQL).all(projectId, after?.createdAt ?? Number.MAX_SAFE_INTEGER, after?.id ?? '', limit + 1) as { id: string; created_at: number }[];
    const page = rows.slice(0, limit);
    const ids = this.db.prepare(PERSON_IDS_SQL).pluck();
    const persons = page.map((r) => {
      const found = ids.all(projectId, r.id, projectId, r.id, SHOWN_IDS + 1) as string[];
      return { id: r.id, createdAt: r.created_at, distinctIds: found.slice(0, SHOWN_IDS), moreIds: found.length > SHOWN_IDS };
    });
    const last = page.at(-1);
    return { persons, next: rows.length > limit && last !== undefined ? { createdAt: last.created_at, id: last.id } : null };
  }

  /** On the page-read thread, as eventsPerDay. */
  personEvents(projectId: string, personId: string, limit: number, scan: number): Promise<StoredEvent[]> {
    return this.reader.personEvents(projectId, personId, limit, scan);
  }
}
