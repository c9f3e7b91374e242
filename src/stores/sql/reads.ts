import type { EventPages, GroupStore, PersonLookup, PersonView, ReadStore, SqlEngine, StoredEvent } from '../port.js';

/** Events, people and usage as the CLI and the console read them, on either SQL engine. */
export class SqlReads implements Omit<ReadStore, keyof GroupStore> {
  constructor(
    private readonly engine: SqlEngine,
    private readonly pages: EventPages,
  ) {}

  /** The first page of the source's events, newest first: the engine's event pages find them cheaply. */
  async listEvents(sourceId: string, limit: number): Promise<StoredEvent[]> {
    return (await this.pages.eventPage({ sourceId, order: 'desc', after: null, limit })).events;
  }

  async findPerson(projectId: string, lookup: PersonLookup): Promise<PersonView | null> {
    const db = this.engine.db;
    const start = 'distinctId' in lookup
      ? (await db.selectFrom('person_links').select('person_id').where('project_id', '=', projectId)
        .where('distinct_id', '=', lookup.distinctId).executeTakeFirst())?.person_id
      : lookup.personId;
    if (start === undefined) return null;
    // A merged person is shown as the person it was merged into.
    const p = await db.selectFrom('persons as p')
      .leftJoin('persons as m', (j) => j.onRef('m.project_id', '=', 'p.project_id').onRef('m.id', '=', 'p.merged_into'))
      .select((eb) => [eb.fn.coalesce('m.id', 'p.id').as('id'), eb.fn.coalesce('m.created_at', 'p.created_at').as('created_at')])
      .where('p.project_id', '=', projectId).where('p.id', '=', start).executeTakeFirst();
    if (p === undefined) return null;
    const ids = await db.selectFrom('person_links').select('distinct_id').where('project_id', '=', projectId)
      .where('person_id', '=', p.id).orderBy(this.engine.dialect.bytewise('distinct_id')).execute();
    // An unset trait is a row marked unset (a tombstone that keeps older values out): the person has no value.
    const traits = await db.selectFrom('person_traits').select(['key', this.engine.dialect.jsonText('value').as('value')])
      .where('project_id', '=', projectId).where('person_id', '=', p.id).where('unset', '=', false).orderBy(this.engine.dialect.bytewise('key')).execute();
    const groups = await db.selectFrom('group_members').select(['group_type', 'group_key'])
      .where('project_id', '=', projectId).where('person_id', '=', p.id)
      .orderBy(this.engine.dialect.bytewise('group_type')).orderBy(this.engine.dialect.bytewise('group_key')).execute();
    return {
      id: p.id,
      distinctIds: ids.map((r) => r.distinct_id),
      traits: Object.fromEntries(traits.map((t) => [t.key, JSON.parse(t.value)])),
      createdAt: p.created_at,
      groups: groups.map((g) => ({ groupType: g.group_type, groupKey: g.group_key })),
    };
  }

  async usage(projectId: string, month: string): Promise<number> {
    const r = await this.engine.db.selectFrom('usage').select('events').where('project_id', '=', projectId)
      .where('month', '=', month).executeTakeFirst();
    return r?.events ?? 0;
  }
}
