import type { Org, Project, Source, SqlEngine } from '../port.js';
import type { GroupListing, GroupPageQuery, ListingStore, PersonCursor, PersonEvents, PersonListing } from '../port-console.js';
import type { TunedReads } from './defaults.js';
import { groupPage, groupTypes } from './group-pages.js';
import type { SqlPersonEvents } from './person-events.js';
import { toOrg, toProject, toSource } from './rows.js';

/** Distinct ids a listed person shows. */
const SHOWN_IDS = 3;

/**
 * Of the events stored past the fold's mark, a person's read looks among at
 * most this many of the newest: the fold keeps within a few thousand of the
 * head, so this binds only while it catches up (sql/person-events.ts).
 */
const PAST_MARK_READ = 100_000;


/** A project's distinct ids that start with `prefix`, in byte order, with their persons (the plan tests read it). */
export function distinctIdSearch(engine: SqlEngine, projectId: string, prefix: string, limit: number) {
  // A range of an index of the links in byte order: a prefix search reads only what it returns.
  return engine.db.selectFrom('person_links as l')
    .leftJoin('persons as p', (j) => j.onRef('p.project_id', '=', 'l.project_id').onRef('p.id', '=', 'l.person_id'))
    .select((eb) => ['l.distinct_id', eb.fn.coalesce('p.merged_into', 'l.person_id').as('person_id')])
    .where('l.project_id', '=', projectId).where(engine.dialect.startsWith('l.distinct_id', prefix))
    .orderBy(engine.dialect.bytewise('l.distinct_id')).limit(limit);
}

/** Lists and summaries for the console and the list commands, on either SQL engine. */
export class SqlListings implements ListingStore {
  constructor(
    private readonly engine: SqlEngine,
    private readonly reads: TunedReads,
    private readonly persons: Pick<SqlPersonEvents, 'latest'>,
  ) {}

  async listOrgs(): Promise<Org[]> {
    const rows = await this.engine.db.selectFrom('orgs').selectAll().where('deleted_at', 'is', null)
      .orderBy(this.engine.dialect.bytewise('name')).orderBy(this.engine.dialect.bytewise('id')).execute();
    return rows.map(toOrg);
  }

  async listProjects(orgId: string | null): Promise<Project[]> {
    const rows = await this.engine.db.selectFrom('projects as p').innerJoin('orgs as o', 'o.id', 'p.org_id').selectAll('p')
      .where('p.deleted_at', 'is', null).where('o.deleted_at', 'is', null)
      .$if(orgId !== null, (q) => q.where('p.org_id', '=', orgId!))
      .orderBy(this.engine.dialect.bytewise('p.name')).orderBy(this.engine.dialect.bytewise('p.id')).execute();
    return rows.map(toProject);
  }

  async listSources(projectId: string): Promise<Source[]> {
    const rows = await this.engine.db.selectFrom('sources as s').innerJoin('projects as p', 'p.id', 's.project_id').innerJoin('orgs as o', 'o.id', 'p.org_id')
      .selectAll('s').where('s.project_id', '=', projectId)
      .where('s.deleted_at', 'is', null).where('p.deleted_at', 'is', null).where('o.deleted_at', 'is', null)
      .orderBy(this.engine.dialect.bytewise('s.name')).orderBy(this.engine.dialect.bytewise('s.id')).execute();
    return rows.map(toSource);
  }

  async searchDistinctIds(projectId: string, prefix: string, limit: number): Promise<{ distinctId: string; personId: string }[]> {
    const rows = await this.reads.searchDistinctIds(projectId, prefix, limit);
    return rows.map((r) => ({ distinctId: r.distinct_id, personId: r.person_id }));
  }

  async listPersons(projectId: string, limit: number, after: PersonCursor | null): Promise<{ persons: PersonListing[]; next: PersonCursor | null }> {
    // One more than asked tells whether a next page exists; likewise for the ids shown.
    const rows = await this.reads.personPage(projectId, after, limit + 1, SHOWN_IDS + 1);
    const persons = rows.slice(0, limit).map((r) => ({ id: r.id, createdAt: r.createdAt, distinctIds: r.ids.slice(0, SHOWN_IDS), moreIds: r.ids.length > SHOWN_IDS }));
    const last = persons.at(-1);
    return { persons, next: rows.length > limit && last !== undefined ? { createdAt: last.createdAt, id: last.id } : null };
  }

  personEvents(projectId: string, personId: string, limit: number): Promise<PersonEvents> {
    return this.persons.latest(projectId, personId, limit, PAST_MARK_READ);
  }

  countPersons(projectId: string): Promise<number> {
    return this.reads.countPersons(projectId);
  }

  groupTypes(projectId: string): Promise<string[]> {
    return groupTypes(this.engine, this.reads, projectId);
  }

  groupPage(projectId: string, q: GroupPageQuery): Promise<GroupListing[]> {
    return groupPage(this.engine, this.reads, projectId, q);
  }
}
