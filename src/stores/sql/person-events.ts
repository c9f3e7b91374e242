import { type Kysely, sql } from 'kysely';
import type { DestinationsEngine, EventRow, FoldStep, SqlEngine } from '../port.js';
import { MERGED_READ, type PersonEvents } from '../port-console.js';
import type { Tuning } from './defaults.js';
import type { WriteTurn } from './engine.js';
import { toStoredEvent } from './rows.js';
import type { Database } from './schema.js';

/**
 * A person's events, found by person (docs/design.md, "A person's events").
 *
 * Why not an index on events by person: every commit would then write at
 * each of its persons' places in it, a page per distinct person, which cost
 * ingestion 2.3 to 2.5 times its events/s. Instead the events are folded in
 * here off the request path, a window of seqs at a time, each window's keys
 * inserted sorted (project, person, timestamp, seq); a read takes the
 * project's mark, then the keys through it (every one written before the
 * mark moved past it) and the events past it from the events table itself.
 *
 * A step writes the keys and moves the mark in one transaction; a key
 * already there is left, so a step run twice leaves what one would, and
 * servers sharing a PostgreSQL database skip a project another is folding
 * (its mark's row locked). Reads join the keys to the events, so a key whose event was
 * erased or expired shows nothing.
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
   * gone, port-destinations.ts). Reads at most `window` events.
   */
  async fold(projectId: string, window: number): Promise<FoldStep> {
    const head = await this.heads.head(projectId);
    return this.turn.write(async () => {
      const began = performance.now();
      const step = await this.db.transaction().execute((trx) => this.step(trx, projectId, window, head));
      return { ...step, ms: performance.now() - began, heldWriter: this.turn.holdsWriter };
    });
  }

  /** A step, in one transaction: the keys of the window, then the mark. */
  private async step(trx: Kysely<Database>, projectId: string, window: number, head: number): Promise<Pick<FoldStep, 'folded' | 'more'>> {
    // Servers sharing a database share the work: one whose step finds the mark locked leaves the project to the other.
    const row = await trx.selectFrom('person_events_folded').select('through').where('project_id', '=', projectId)
      .$if(this.engine.dialect.rowLocks, (q) => q.forUpdate().skipLocked()).executeTakeFirst();
    if (row === undefined && (await this.mark(trx, projectId)) !== null) return { folded: 0, more: false };
    const mark = Number(row?.through ?? 0);
    const through = Math.min(head, mark + window);
    if (through <= mark) return { folded: 0, more: false };
    const keys = trx.selectFrom(seqRange(trx, mark, through).select(['e.project_id', 'e.person_id', 'e.timestamp', 'e.seq']).limit(window).as('w'))
      .select(['project_id', 'person_id', 'timestamp', 'seq']).where('project_id', '=', projectId)
      // Sorted as the key: the inserts walk the index once, in order.
      .orderBy('person_id').orderBy('timestamp').orderBy('seq');
    const r = await this.engine.dialect.insertIgnoring(trx.insertInto('person_events').columns(['project_id', 'person_id', 'timestamp', 'seq']).expression(keys))
      .executeTakeFirst();
    await trx.insertInto('person_events_folded').values({ project_id: projectId, through })
      .onConflict((c) => c.column('project_id').doUpdateSet({ through }).where('person_events_folded.through', '<', through)).execute();
    return { folded: Number(r.numInsertedOrUpdatedRows ?? 0), more: through < head };
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
    // Each person's keys newest first, as a range of the key read backwards; the join skips keys whose event is gone.
    const folded = ids.map((id, i) => db.selectFrom(
      db.selectFrom('person_events as k')
        .innerJoin('events as e', (j) => j.onRef('e.seq', '=', 'k.seq').onRef('e.project_id', '=', 'k.project_id').onRef('e.timestamp', '=', 'k.timestamp'))
        .select(columns).where('k.project_id', '=', projectId).where('k.person_id', '=', id).where('k.seq', '<=', mark)
        .orderBy('k.timestamp', 'desc').orderBy('k.seq', 'desc').limit(limit).as(`f${i}`),
    ).selectAll());
    const past = seqRange(db, lowest, null).select([...columns, 'e.project_id']).limit(Number.MAX_SAFE_INTEGER).as('t');
    let all = db.selectFrom(past).select(['seq', 'id', 'event', 'distinct_id', 'anonymous_id', 'person_id', 'session_id', 'timestamp', 'received_at', 'insert_id', 'properties'])
      .where('project_id', '=', projectId).where('person_id', 'in', ids);
    for (const f of folded) all = all.unionAll(f);
    const q = db.selectFrom(all.as('u')).selectAll().orderBy('timestamp', 'desc').orderBy('seq', 'desc').limit(limit);
    const rows = await this.reads.pageRows(q.compile()) as EventRow[];
    return { events: rows.map((r) => ({ ...toStoredEvent(r), personId })), complete: lowest === mark && merged.length < MERGED_READ };
  }

  /**
   * Deletes the keys of events before `before` among the persons past
   * `after`, up to the person found `batch` keys on: each person's oldest
   * keys lead its range of the key, so a step reads about `batch` keys (and
   * the last person's). Keys whose events expired would otherwise stay.
   */
  async expire(projectId: string, before: number, after: string | null, batch: number): Promise<{ deleted: number; next: string | null }> {
    return this.turn.write(async () => {
      const bound = await this.db.selectFrom('person_events').select('person_id').where('project_id', '=', projectId)
        .$if(after !== null, (q) => q.where('person_id', '>', after!))
        .orderBy('person_id').orderBy('timestamp').orderBy('seq').limit(1).offset(batch).executeTakeFirst();
      const upTo = bound?.person_id ?? null;
      const r = await this.db.deleteFrom('person_events').where('project_id', '=', projectId)
        .$if(after !== null, (q) => q.where('person_id', '>', after!))
        .$if(upTo !== null, (q) => q.where('person_id', '<=', upTo!)).where('timestamp', '<', before).executeTakeFirst();
      return { deleted: Number(r.numDeletedRows), next: upTo };
    });
  }

  /** Forgets the keys of persons whose events are all gone (an erasure's end). */
  async forget(db: Kysely<Database>, projectId: string, personIds: string[]): Promise<void> {
    if (personIds.length === 0) return;
    await db.deleteFrom('person_events').where('project_id', '=', projectId).where('person_id', 'in', personIds).execute();
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
