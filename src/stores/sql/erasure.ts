import type { Kysely } from 'kysely';
import type { Engine, ErasureTx, PendingErasure, PersonLookup } from '../port.js';
import type { Database } from './schema.js';

type Db = Kysely<Database>;

/** Rows of suppressions written per statement: well inside either engine's limit of parameters. */
const ROWS_PER_INSERT = 1000;

/** An erasure's first transaction on either SQL engine: the reads and writes domain/erasure.ts decides with. */
export class SqlErasureTx implements ErasureTx {
  constructor(
    private readonly engine: Engine,
    private readonly db: Db,
  ) {}

  lockProject(projectId: string): Promise<void> {
    return this.engine.sql.lockProjects(this.db, [projectId]);
  }

  async currentPerson(projectId: string, lookup: PersonLookup): Promise<string | null> {
    const start = 'distinctId' in lookup
      ? (await this.db.selectFrom('person_links').select('person_id').where('project_id', '=', projectId)
        .where('distinct_id', '=', lookup.distinctId).executeTakeFirst())?.person_id
      : lookup.personId;
    if (start === undefined) return null;
    const current = await this.db.selectFrom('persons').select((eb) => eb.fn.coalesce('merged_into', 'id').as('id'))
      .where('project_id', '=', projectId).where('id', '=', start).executeTakeFirst();
    return current?.id ?? null;
  }

  async mergedInto(projectId: string, personId: string): Promise<string[]> {
    const rows = await this.db.selectFrom('persons').select('id').where('project_id', '=', projectId).where('merged_into', '=', personId).execute();
    return rows.map((r) => r.id);
  }

  async linkedIds(projectId: string, personIds: string[]): Promise<string[]> {
    const rows = await this.db.selectFrom('person_links').select('distinct_id').where('project_id', '=', projectId)
      .where('person_id', 'in', personIds).orderBy(this.engine.sql.dialect.bytewise('distinct_id')).execute();
    return rows.map((r) => r.distinct_id);
  }

  async suppress(projectId: string, erasedPersonId: string, ids: { distinctIds: string[]; personIds: string[] }, now: number): Promise<void> {
    for (const part of chunks(ids.distinctIds)) {
      await this.db.insertInto('suppressed_ids').values(part.map((d) => ({ project_id: projectId, distinct_id: d, created_at: now, person_id: erasedPersonId })))
        .onConflict((c) => c.columns(['project_id', 'distinct_id']).doUpdateSet((eb) => ({ person_id: eb.ref('excluded.person_id') }))).execute();
    }
    for (const part of chunks(ids.personIds)) {
      await this.db.insertInto('suppressed_persons').values(part.map((p) => ({ project_id: projectId, person_id: p, erased_person_id: erasedPersonId, created_at: now })))
        .onConflict((c) => c.doNothing()).execute();
    }
  }

  async removePersons(projectId: string, personIds: string[], distinctIds: string[]): Promise<void> {
    await this.db.deleteFrom('person_links').where('project_id', '=', projectId).where('person_id', 'in', personIds).execute();
    await this.db.deleteFrom('person_traits').where('project_id', '=', projectId).where('person_id', 'in', personIds).execute();
    // Memberships are the person's; the groups are not people and stay.
    await this.db.deleteFrom('group_members').where('project_id', '=', projectId).where('person_id', 'in', personIds).execute();
    await this.db.deleteFrom('persons').where('project_id', '=', projectId).where('id', 'in', personIds).execute();
    // Refused and dropped items kept as samples that sent one of its distinct_ids (as an alias's previous_id too), or one of its person ids as anonymous_id.
    for (const part of chunks(distinctIds)) {
      await this.db.deleteFrom('item_samples').where('project_id', '=', projectId)
        .where((eb) => eb.or([eb('distinct_id', 'in', part), eb('previous_id', 'in', part)])).execute();
    }
    for (const part of chunks(personIds)) {
      await this.db.deleteFrom('item_samples').where('project_id', '=', projectId).where('anonymous_id', 'in', part).execute();
    }
  }

  async recordPending(projectId: string, personIds: string[]): Promise<PendingErasure> {
    const q = this.engine.sql;
    const r = await this.db.insertInto('pending_erasures')
      .values({ project_id: projectId, person_ids: q.dialect.idList(personIds), through_seq: q.newestArrival(), touched_at: q.clock() })
      .returning(['id', 'through_seq']).executeTakeFirstOrThrow();
    return { id: r.id, projectId, personIds, arrivedThrough: r.through_seq };
  }

  async liftDistinctId(projectId: string, distinctId: string): Promise<{ erasedPersonId: string | null } | null> {
    const gone = await this.db.deleteFrom('suppressed_ids').where('project_id', '=', projectId).where('distinct_id', '=', distinctId)
      .returning('person_id').executeTakeFirst();
    return gone === undefined ? null : { erasedPersonId: gone.person_id };
  }

  async erasureOfPersonId(projectId: string, personId: string): Promise<string | null> {
    const found = await this.db.selectFrom('suppressed_persons').select('erased_person_id')
      .where('project_id', '=', projectId).where('person_id', '=', personId).executeTakeFirst();
    return found?.erased_person_id ?? null;
  }

  async liftPersonIdsOf(projectId: string, erasedPersonId: string): Promise<void> {
    await this.db.deleteFrom('suppressed_persons').where('project_id', '=', projectId).where('erased_person_id', '=', erasedPersonId).execute();
  }
}

function chunks<T>(list: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += ROWS_PER_INSERT) out.push(list.slice(i, i + ROWS_PER_INSERT));
  return out;
}
