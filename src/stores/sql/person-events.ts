import { type Kysely, type SelectQueryBuilder, sql } from 'kysely';
import type { DestinationsEngine, EventRow, FoldStep, SqlEngine } from '../port.js';
import { MERGED_READ, PERSON_EVENTS_KEPT, type PersonEvents } from '../port-console.js';
import type { Tuning } from './defaults.js';
import type { WriteTurn } from './engine.js';
import { runsToMerge } from './person-event-runs.js';
import { toStoredEvent } from './rows.js';
import type { Database } from './schema.js';

/**
 * A person's events, found by person (docs/design.md, "A person's events").
 *
 * Why not an index on events by person: every commit would then write at
 * each of its persons' places in it, a page per distinct person, which cost
 * ingestion 2.3 to 2.5 times its events/s. Why not one table of keys by
 * person filled off the request path either: each step of the fold then
 * writes a page per distinct person in its window, a cost that grows with
 * the keys stored. Instead the keys are kept in sorted runs, as a
 * log-structured merge keeps them: a fold step reads a window of seqs and
 * writes its keys as one new run, numbered past the project's others, so
 * they land at the end of the project's range, a page per few dozen keys;
 * each run keeps a person's PERSON_EVENTS_KEPT newest only. Runs of similar
 * size are merged in the background a batch of persons at a time
 * (person-event-runs.ts says which), so a project keeps few. A read takes
 * the project's mark, then the person's keys through it in each run (every
 * one written before the mark moved past it) and the events past it from
 * the events table itself.
 *
 * A step (a fold's or a merge's) is one transaction under the mark's row:
 * servers sharing a PostgreSQL database skip a project another is stepping
 * (the row locked). A merge moves each batch of persons' keys from the runs
 * merged into the new one in one transaction, so a read finds each key in
 * one run or the other, never both. Reads join the keys to the events, so
 * a key whose event was erased or expired shows nothing.
 */
export class SqlPersonEvents {
  private readonly db: Kysely<Database>;

  constructor(
    private readonly engine: SqlEngine,
    private readonly heads: Pick<DestinationsEngine, 'head'>,
    /** The engine's turn for a write that changes no key nor person, and whether a step holds ingestion's writer (Tuning). */
    private readonly turn: { write: WriteTurn; holdsWriter: boolean },
    private readonly reads: Pick<Tuning, 'pageRows'>,
  ) {
    this.db = engine.db;
  }

  /** Live projects, whose events are folded in. */
  async foldProjects(): Promise<string[]> {
    const rows = await this.db.selectFrom('projects').select('id').where('deleted_at', 'is', null)
      .orderBy(this.engine.dialect.bytewise('id')).execute();
    return rows.map((r) => r.id);
  }

  /**
   * Folds the project's events among the next `window` seqs past its mark,
   * no further than the project's head (every seq up to it committed or
   * gone, port-destinations.ts), into a new run. Reads at most `window` events.
   */
  async fold(projectId: string, window: number): Promise<FoldStep> {
    const head = await this.heads.head(projectId);
    return this.stepped((trx) => this.foldStep(trx, projectId, window, head));
  }

  /** A step of merging the project's runs: the merge under way, or the one they call for (person-event-runs.ts). */
  merge(projectId: string, batch: number): Promise<FoldStep> {
    return this.stepped((trx) => this.mergeStep(trx, projectId, batch));
  }

  private stepped(fn: (trx: Kysely<Database>) => Promise<Pick<FoldStep, 'folded' | 'more' | 'merge'>>): Promise<FoldStep> {
    return this.turn.write(async () => {
      const began = performance.now();
      const step = await this.db.transaction().execute(fn);
      return { ...step, ms: performance.now() - began, heldWriter: this.turn.holdsWriter };
    });
  }

  /** A fold step: the window's keys as a new run, then the mark. */
  private async foldStep(trx: Kysely<Database>, projectId: string, window: number, head: number): Promise<Pick<FoldStep, 'folded' | 'more' | 'merge'>> {
    const mark = await this.lockMark(trx, projectId);
    if (mark === null) return { folded: 0, more: false, merge: false };
    const through = Math.min(head, mark.through + window);
    if (through <= mark.through) return { folded: 0, more: false, merge: await this.mergeDue(trx, projectId) };
    const run = mark.lastRun + 1;
    const events = trx.selectFrom(seqRange(trx, mark.through, through).select(['e.project_id', 'e.person_id', 'e.timestamp', 'e.seq']).limit(window).as('w'))
      .select(['w.project_id', 'w.person_id', 'w.timestamp', 'w.seq']).where('w.project_id', '=', projectId);
    const r = await this.engine.dialect.insertIgnoring(trx.insertInto('person_events').columns(KEY_COLUMNS).expression(newestKept(trx, events, run)))
      .executeTakeFirst();
    const keys = Number(r.numInsertedOrUpdatedRows ?? 0);
    if (keys > 0) {
      await trx.insertInto('person_event_runs').values({ project_id: projectId, run, keys, merging_into: null, merged_through: null }).execute();
    }
    await trx.updateTable('person_events_folded').set({ through, last_run: keys > 0 ? run : mark.lastRun }).where('project_id', '=', projectId).execute();
    return { folded: keys, more: through < head, merge: await this.mergeDue(trx, projectId) };
  }

  /**
   * A merge step: the keys of the next persons of the runs being merged
   * (about `batch` keys, shared among them) move to the run they are merged
   * into, a person's newest PERSON_EVENTS_KEPT kept; once the last person
   * moved, the runs merged are forgotten. With no merge under way, one
   * starts if the runs call for it.
   */
  private async mergeStep(trx: Kysely<Database>, projectId: string, batch: number): Promise<Pick<FoldStep, 'folded' | 'more' | 'merge'>> {
    const mark = await this.lockMark(trx, projectId);
    if (mark === null) return { folded: 0, more: false, merge: false };
    const runs = (await trx.selectFrom('person_event_runs').select(['run', 'keys', 'merging_into', 'merged_through'])
      .where('project_id', '=', projectId).execute())
      .map((r) => ({ run: Number(r.run), keys: Number(r.keys), into: r.merging_into === null ? null : Number(r.merging_into), through: r.merged_through }));
    let sources = runs.filter((r) => r.into !== null);
    let target: number;
    let after: string | null;
    if (sources.length > 0) {
      target = sources[0]!.into!;
      after = runs.find((r) => r.run === target)?.through ?? null;
    } else {
      const pick = runsToMerge(runs);
      if (pick === null) return { folded: 0, more: false, merge: false };
      target = mark.lastRun + 1;
      await trx.updateTable('person_events_folded').set({ last_run: target }).where('project_id', '=', projectId).execute();
      await trx.insertInto('person_event_runs').values({ project_id: projectId, run: target, keys: 0, merging_into: null, merged_through: null }).execute();
      await trx.updateTable('person_event_runs').set({ merging_into: target }).where('project_id', '=', projectId).where('run', 'in', pick).execute();
      sources = runs.filter((r) => pick.includes(r.run));
      after = null;
    }
    const from = sources.map((s) => s.run);
    // The step ends at the first person found a share of the batch on in any of the runs (the rest of each run when none is).
    const share = Math.max(1, Math.floor(batch / from.length));
    const bounds = from.map((run) => trx.selectFrom(
      trx.selectFrom('person_events').select('person_id').where('project_id', '=', projectId).where('run', '=', run)
        .$if(after !== null, (q) => q.where('person_id', '>', after!))
        .orderBy('person_id').orderBy('timestamp').orderBy('seq').limit(1).offset(share).as('b'),
    ).select('b.person_id'));
    let union = bounds[0]!;
    for (const b of bounds.slice(1)) union = union.unionAll(b);
    const bound = await trx.selectFrom(union.as('u')).select((eb) => eb.fn.min('u.person_id').as('person_id')).executeTakeFirst();
    const upTo = bound?.person_id ?? null;
    const moving = trx.selectFrom('person_events').select(['project_id', 'person_id', 'timestamp', 'seq'])
      .where('project_id', '=', projectId).where('run', 'in', from)
      .$if(after !== null, (q) => q.where('person_id', '>', after!)).$if(upTo !== null, (q) => q.where('person_id', '<=', upTo!));
    const r = await this.engine.dialect.insertIgnoring(trx.insertInto('person_events').columns(KEY_COLUMNS).expression(newestKept(trx, moving, target)))
      .executeTakeFirst();
    const kept = Number(r.numInsertedOrUpdatedRows ?? 0);
    const d = await trx.deleteFrom('person_events').where('project_id', '=', projectId).where('run', 'in', from)
      .$if(after !== null, (q) => q.where('person_id', '>', after!)).$if(upTo !== null, (q) => q.where('person_id', '<=', upTo!)).executeTakeFirst();
    const read = Number(d.numDeletedRows);
    const size = (runs.find((x) => x.run === target)?.keys ?? 0) + kept;
    if (upTo !== null) {
      await trx.updateTable('person_event_runs').set({ keys: size, merged_through: upTo }).where('project_id', '=', projectId).where('run', '=', target).execute();
      return { folded: read, more: true, merge: true };
    }
    await trx.deleteFrom('person_event_runs').where('project_id', '=', projectId).where('run', 'in', from).execute();
    await trx.updateTable('person_event_runs').set({ keys: size, merged_through: null }).where('project_id', '=', projectId).where('run', '=', target).execute();
    const due = runsToMerge([...runs.filter((x) => !from.includes(x.run) && x.run !== target), { run: target, keys: size }]) !== null;
    return { folded: read, more: due, merge: due };
  }

  /** Whether the project's runs call for a merge step: one is under way, or they call for one. */
  private async mergeDue(trx: Kysely<Database>, projectId: string): Promise<boolean> {
    const runs = await trx.selectFrom('person_event_runs').select(['run', 'keys', 'merging_into']).where('project_id', '=', projectId).execute();
    return runs.some((r) => r.merging_into !== null) || runsToMerge(runs.map((r) => ({ run: Number(r.run), keys: Number(r.keys) }))) !== null;
  }

  /**
   * The project's mark and last run, its row locked (PostgreSQL: SKIP
   * LOCKED, null when another server holds it); made for a project older
   * than the fold, whose events it then reads from the first seq.
   */
  private async lockMark(trx: Kysely<Database>, projectId: string): Promise<{ through: number; lastRun: number } | null> {
    const read = () => trx.selectFrom('person_events_folded').select(['through', 'last_run']).where('project_id', '=', projectId)
      .$if(this.engine.dialect.rowLocks, (q) => q.forUpdate().skipLocked()).executeTakeFirst();
    let row = await read();
    if (row === undefined) {
      if ((await this.mark(trx, projectId)) !== null) return null;
      await trx.insertInto('person_events_folded').values({ project_id: projectId, through: 0, last_run: 0 })
        .onConflict((c) => c.column('project_id').doNothing()).execute();
      row = await read();
      if (row === undefined) return null;
    }
    return { through: Number(row.through), lastRun: Number(row.last_run) };
  }

  /**
   * The person's newest `limit` events, those of the persons merged into it
   * included: the keys folded in, then the events past the mark, at most
   * `tail` of the newest stored (so a fold far behind, as on the first start
   * after the upgrade, keeps the read bounded: `complete` is then false).
   */
  async latest(projectId: string, personId: string, limit: number, tail: number): Promise<PersonEvents> {
    const { db } = this;
    // The persons merged into it, through persons_merged_into (one more than read tells that more exist).
    const merged = await db.selectFrom('persons').select('id').where('project_id', '=', projectId).where('merged_into', '=', personId)
      .limit(MERGED_READ).execute();
    const ids = [personId, ...merged.slice(0, MERGED_READ - 1).map((p) => p.id)];
    // The mark as read here splits the events: keys through it (all written before it moved), the table past it.
    const at = await db.selectNoFrom((eb) => [
      sql<number>`coalesce((${eb.selectFrom('person_events_folded').select('through').where('project_id', '=', projectId)}), 0)`.as('mark'),
      sql<number>`${this.engine.newestArrival()}`.as('newest'),
    ]).executeTakeFirstOrThrow();
    const mark = Number(at.mark);
    const lowest = Math.max(mark, Number(at.newest) - tail);
    const columns = [
      'e.seq', 'e.id', 'e.event', 'e.distinct_id', 'e.anonymous_id', 'e.person_id',
      'e.session_id', 'e.timestamp', 'e.received_at', 'e.insert_id', this.engine.dialect.jsonText('e.properties').as('properties'),
    ] as const;
    // The persons' keys in each of the project's runs (a range of the key per run and person, PERSON_EVENTS_KEPT
    // at most each), runs listed in the same statement, so that a merge's step is seen whole or not at all;
    // the join skips keys whose event is gone.
    const folded = db.selectFrom(
      db.selectFrom('person_events as k')
        .innerJoin('events as e', (j) => j.onRef('e.seq', '=', 'k.seq').onRef('e.project_id', '=', 'k.project_id').onRef('e.timestamp', '=', 'k.timestamp'))
        .select(columns).where('k.project_id', '=', projectId)
        .where('k.run', 'in', db.selectFrom('person_event_runs').select('run').where('project_id', '=', projectId))
        .where('k.person_id', 'in', ids).where('k.seq', '<=', mark)
        .orderBy('k.timestamp', 'desc').orderBy('k.seq', 'desc').limit(limit).as('f'),
    ).selectAll();
    const past = seqRange(db, lowest, null).select([...columns, 'e.project_id']).limit(Number.MAX_SAFE_INTEGER).as('t');
    const all = db.selectFrom(past).select(['seq', 'id', 'event', 'distinct_id', 'anonymous_id', 'person_id', 'session_id', 'timestamp', 'received_at', 'insert_id', 'properties'])
      .where('project_id', '=', projectId).where('person_id', 'in', ids).unionAll(folded);
    const q = db.selectFrom(all.as('u')).selectAll().orderBy('timestamp', 'desc').orderBy('seq', 'desc').limit(limit);
    const rows = await this.reads.pageRows(q.compile()) as EventRow[];
    return { events: rows.map((r) => ({ ...toStoredEvent(r), personId })), complete: lowest === mark && merged.length < MERGED_READ };
  }

  /**
   * Deletes the keys of events before `before` from `after` on (a cursor
   * this returned: a run, and the person after which to start in it), up to
   * the person found `batch` keys on in that run: each person's oldest keys
   * lead its range of a run, so a step reads about `batch` keys (and the
   * last person's). Keys whose events expired would otherwise stay until
   * their runs merge, and those of the largest runs seldom do.
   */
  async expire(projectId: string, before: number, after: string | null, batch: number): Promise<{ deleted: number; next: string | null }> {
    const at = readCursor(after);
    return this.turn.write(async () => {
      const found = await this.db.selectFrom('person_event_runs').select('run').where('project_id', '=', projectId).where('run', '>=', at.run)
        .orderBy('run').limit(1).executeTakeFirst();
      if (found === undefined) return { deleted: 0, next: null };
      const run = Number(found.run);
      // A run merged away since the last step: its keys are in a later run, swept from its first person.
      const from = run === at.run ? at.person : null;
      const bound = await this.db.selectFrom('person_events').select('person_id').where('project_id', '=', projectId).where('run', '=', run)
        .$if(from !== null, (q) => q.where('person_id', '>', from!))
        .orderBy('person_id').orderBy('timestamp').orderBy('seq').limit(1).offset(batch).executeTakeFirst();
      const upTo = bound?.person_id ?? null;
      const r = await this.db.deleteFrom('person_events').where('project_id', '=', projectId).where('run', '=', run)
        .$if(from !== null, (q) => q.where('person_id', '>', from!))
        .$if(upTo !== null, (q) => q.where('person_id', '<=', upTo!)).where('timestamp', '<', before).executeTakeFirst();
      return { deleted: Number(r.numDeletedRows), next: upTo !== null ? `${run}:${upTo}` : `${run + 1}` };
    });
  }

  /** Forgets the keys of persons whose events are all gone (an erasure's end), in every run. */
  async forget(db: Kysely<Database>, projectId: string, personIds: string[]): Promise<void> {
    if (personIds.length === 0) return;
    await db.deleteFrom('person_events').where('project_id', '=', projectId)
      .where('run', 'in', db.selectFrom('person_event_runs').select('run').where('project_id', '=', projectId))
      .where('person_id', 'in', personIds).execute();
  }

  /** The project's mark, read without a lock; null before its first fold. */
  private async mark(db: Kysely<Database>, projectId: string): Promise<number | null> {
    const r = await db.selectFrom('person_events_folded').select('through').where('project_id', '=', projectId).executeTakeFirst();
    return r === undefined ? null : Number(r.through);
  }
}

/**
 * The events past `after` (through `through` when given), whatever their
 * project, read as a range of seqs: SQLite's rowids, PostgreSQL's BRIN index
 * on seq. The caller ends it with a limit, which keeps a planner from
 * merging its project's condition into it: PostgreSQL would then read the
 * project's whole index on (project, timestamp) for it.
 */
function seqRange(db: Kysely<Database>, after: number, through: number | null) {
  return db.selectFrom('events as e').where('e.seq', '>', after).$if(through !== null, (q) => q.where('e.seq', '<=', through!));
}

/** The columns of person_events, as a run is written. */
const KEY_COLUMNS = ['project_id', 'run', 'person_id', 'timestamp', 'seq'] as const;

/** A key's columns but its run. */
interface KeyRow {
  project_id: string;
  person_id: string;
  timestamp: number;
  seq: number;
}

/**
 * The keys `from` selects as rows of run `run`, each person's newest
 * PERSON_EVENTS_KEPT only, sorted as the key: the inserts walk the run's
 * range once, in order.
 */
function newestKept<DB, TB extends keyof DB>(db: Kysely<Database>, from: SelectQueryBuilder<DB, TB, KeyRow>, run: number) {
  const ranked = db.selectFrom(from.as('src')).select((eb) => [
    'src.project_id', 'src.person_id', 'src.timestamp', 'src.seq',
    eb.fn.agg<number>('row_number').over((ob) => ob.partitionBy('src.person_id').orderBy('src.timestamp', 'desc').orderBy('src.seq', 'desc')).as('n'),
  ]);
  return db.selectFrom(ranked.as('r')).select((eb) => ['r.project_id', eb.cast<number>(eb.val(run), 'bigint').as('run'), 'r.person_id', 'r.timestamp', 'r.seq'])
    .where('r.n', '<=', PERSON_EVENTS_KEPT).orderBy('r.person_id').orderBy('r.timestamp').orderBy('r.seq');
}

/** A cursor of the sweep of keys (SqlPersonEvents.expire): "<run>" or "<run>:<person after which>"; null, the first run. */
function readCursor(cursor: string | null): { run: number; person: string | null } {
  if (cursor === null) return { run: 0, person: null };
  const colon = cursor.indexOf(':');
  return colon < 0 ? { run: Number(cursor), person: null } : { run: Number(cursor.slice(0, colon)), person: cursor.slice(colon + 1) };
}
