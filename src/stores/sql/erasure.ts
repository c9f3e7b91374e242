import { type Expression, type Kysely, sql } from 'kysely';
import type { ErasedPerson, ErasureStore, PendingErasure, PersonLookup } from '../port.js';
import type { SqlEngine } from './engine.js';
import type { Database } from './schema.js';

type Db = Kysely<Database>;

/** Rows of suppressions written per statement: well inside either engine's limit of parameters. */
const ROWS_PER_INSERT = 1000;

/**
 * What an engine does its own way in an erasure: its write transactions,
 * the newest event stored, its clock, how it lists ids in a column, and the
 * deletion of events in short steps (SQLite by ranges of seqs; PostgreSQL by
 * ranges of time sized to its statement timeout).
 */
export interface ErasureEngine {
  /**
   * Runs `fn` in one write transaction of the store, in its turn with the
   * others (SQLite's queue of writes, whose caches of links and insert_ids
   * learn what each transaction did).
   */
  writing<T>(fn: (db: Db) => Promise<T>): Promise<T>;
  /** In a transaction under the project lock: a seq at or above every event's stored so far, and below every later one's. */
  newestSeq(db: Db): Promise<number>;
  /**
   * Now, in epoch ms, as SQL: the database server's clock where processes on
   * several machines share one (their clocks need not agree), the process's
   * on SQLite, whose processes share one machine.
   */
  clock(): Expression<number>;
  /** The erasure's person ids as pending_erasures.person_ids holds them, and back. */
  personIdsColumn(ids: string[]): string | string[];
  personIdsOf(column: string | string[]): string[];
  /** In the first transaction: these links and persons are gone, and a cache of them must not serve them again. */
  forgot(projectId: string, distinctIds: string[], personIds: string[]): void;
  /**
   * Deletes the erasure's events (of its persons, seq at most throughSeq, in
   * every source of the project) in short steps, calling `touch` at each;
   * starts no step once `stopping()` is true (`done` false then).
   */
  deleteEvents(e: PendingErasure, steps: { touch: () => Promise<void>; stopping?: () => boolean }): Promise<{ eventsDeleted: number; done: boolean }>;
}

/** What the first transaction of an erasure removed and recorded. */
interface Forgotten {
  personId: string;
  distinctIds: string[];
  pending: PendingErasure;
}

/**
 * Person erasure on either SQL engine, its rules written once (the contract
 * is ErasureStore's, in the port): an erasure covers the person and every
 * person merged into it; with suppression, their distinct_ids and their
 * person ids are suppressed, each naming the erased person; the pending
 * record is written in the first transaction under the project lock, touched
 * at every step of deletion, and removed once every event is deleted.
 */
export class SqlErasure implements ErasureStore {
  private readonly db: Db;

  constructor(
    private readonly sqlEngine: SqlEngine,
    private readonly engine: ErasureEngine,
  ) {
    this.db = sqlEngine.db;
  }

  async erasePerson(projectId: string, lookup: PersonLookup, opts: { suppress: boolean; now: number }): Promise<ErasedPerson | null> {
    const f = await this.engine.writing((db) => this.forget(db, projectId, lookup, opts));
    if (f === null) return null;
    const { eventsDeleted } = await this.finishErasure(f.pending);
    return { personId: f.personId, distinctIds: f.distinctIds, eventsDeleted, suppressed: opts.suppress };
  }

  async staleErasures(idleMs: number): Promise<PendingErasure[]> {
    const rows = await this.engine.writing((db) =>
      db.selectFrom('pending_erasures').select(['id', 'project_id', 'person_ids', 'through_seq'])
        .where('touched_at', '<=', sql<number>`${this.engine.clock()} - ${idleMs}`).orderBy('id').execute(),
    );
    return rows.map((r) => ({ id: r.id, projectId: r.project_id, personIds: this.engine.personIdsOf(r.person_ids), throughSeq: r.through_seq }));
  }

  async finishErasure(e: PendingErasure, opts: { stopping?: () => boolean } = {}): Promise<{ eventsDeleted: number; done: boolean }> {
    const touch = (db: Db) => db.updateTable('pending_erasures').set({ touched_at: this.engine.clock() }).where('id', '=', e.id).execute();
    const r = await this.engine.deleteEvents(e, { touch: async () => void (await touch(this.db)), stopping: opts.stopping });
    if (!r.done) return r;
    await this.engine.writing((db) => db.deleteFrom('pending_erasures').where('id', '=', e.id).execute());
    return r;
  }

  async unsuppress(projectId: string, lookup: PersonLookup): Promise<boolean> {
    return this.engine.writing(async (db) => {
      let erasure: string | null;
      if ('distinctId' in lookup) {
        // A distinct_id takes the person ids erased with it along.
        const gone = await db.deleteFrom('suppressed_ids').where('project_id', '=', projectId).where('distinct_id', '=', lookup.distinctId)
          .returning('person_id').executeTakeFirst();
        if (gone === undefined) return false;
        erasure = gone.person_id;
      } else {
        // A person id lifts the person ids of its erasure, and no distinct_id.
        const found = await db.selectFrom('suppressed_persons').select('erased_person_id')
          .where('project_id', '=', projectId).where('person_id', '=', lookup.personId).executeTakeFirst();
        if (found === undefined) return false;
        erasure = found.erased_person_id;
      }
      // null: a distinct_id suppressed before person ids were, with no person to lift.
      if (erasure !== null) {
        await db.deleteFrom('suppressed_persons').where('project_id', '=', projectId).where('erased_person_id', '=', erasure).execute();
      }
      return true;
    });
  }

  /**
   * The first transaction, under the project lock ingestion takes: removes
   * the persons, their links and traits, suppresses their ids if asked, and
   * records the erasure as pending, with the newest event stored until now.
   */
  private async forget(db: Db, projectId: string, lookup: PersonLookup, opts: { suppress: boolean; now: number }): Promise<Forgotten | null> {
    await this.sqlEngine.lockProjects(db, [projectId]);
    const start = 'distinctId' in lookup
      ? (await db.selectFrom('person_links').select('person_id').where('project_id', '=', projectId)
        .where('distinct_id', '=', lookup.distinctId).executeTakeFirst())?.person_id
      : lookup.personId;
    if (start === undefined) return null;
    const current = await db.selectFrom('persons').select((eb) => eb.fn.coalesce('merged_into', 'id').as('id'))
      .where('project_id', '=', projectId).where('id', '=', start).executeTakeFirst();
    if (current === undefined) return null;
    const personId = current.id;
    // Events carry the person they were stored for: the persons merged into this one are erased with it.
    const merged = await db.selectFrom('persons').select('id').where('project_id', '=', projectId).where('merged_into', '=', personId).execute();
    const personIds = [personId, ...merged.map((r) => r.id)];
    const distinctIds = (await db.selectFrom('person_links').select('distinct_id').where('project_id', '=', projectId)
      .where('person_id', 'in', personIds).orderBy(this.sqlEngine.bytewise('distinct_id')).execute()).map((r) => r.distinct_id);
    const throughSeq = await this.engine.newestSeq(db);
    if (opts.suppress) await this.suppress(db, projectId, personId, distinctIds, personIds, opts.now);
    await db.deleteFrom('person_links').where('project_id', '=', projectId).where('person_id', 'in', personIds).execute();
    await db.deleteFrom('person_traits').where('project_id', '=', projectId).where('person_id', 'in', personIds).execute();
    await db.deleteFrom('persons').where('project_id', '=', projectId).where('id', 'in', personIds).execute();
    await this.forgetSamples(db, projectId, distinctIds, personIds);
    this.engine.forgot(projectId, distinctIds, personIds);
    const { id } = await db.insertInto('pending_erasures')
      .values({ project_id: projectId, person_ids: this.engine.personIdsColumn(personIds), through_seq: throughSeq, touched_at: this.engine.clock() })
      .returning('id').executeTakeFirstOrThrow();
    return { personId, distinctIds, pending: { id, projectId, personIds, throughSeq } };
  }

  /** The refused and dropped items kept of the person: those that sent one of its distinct_ids, or one of its person ids as anonymous_id. */
  private async forgetSamples(db: Db, projectId: string, distinctIds: string[], personIds: string[]): Promise<void> {
    for (const part of chunks(distinctIds)) {
      await db.deleteFrom('item_samples').where('project_id', '=', projectId).where('distinct_id', 'in', part).execute();
    }
    for (const part of chunks(personIds)) {
      await db.deleteFrom('item_samples').where('project_id', '=', projectId).where('anonymous_id', 'in', part).execute();
    }
  }

  /**
   * Suppresses the distinct_ids and the person ids (an item may name a
   * person id as its anonymous_id), each naming the erased person, so that
   * lifting one finds the others of its erasure.
   */
  private async suppress(db: Db, projectId: string, personId: string, distinctIds: string[], personIds: string[], now: number): Promise<void> {
    for (const part of chunks(distinctIds)) {
      await db.insertInto('suppressed_ids').values(part.map((d) => ({ project_id: projectId, distinct_id: d, created_at: now, person_id: personId })))
        .onConflict((c) => c.columns(['project_id', 'distinct_id']).doUpdateSet((eb) => ({ person_id: eb.ref('excluded.person_id') }))).execute();
    }
    for (const part of chunks(personIds)) {
      await db.insertInto('suppressed_persons').values(part.map((p) => ({ project_id: projectId, person_id: p, erased_person_id: personId, created_at: now })))
        .onConflict((c) => c.doNothing()).execute();
    }
  }
}

function chunks<T>(list: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < list.length; i += ROWS_PER_INSERT) out.push(list.slice(i, i + ROWS_PER_INSERT));
  return out;
}
