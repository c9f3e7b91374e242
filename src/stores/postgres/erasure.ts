import type pg from 'pg';
import type { ErasedPerson, PendingErasure, PersonLookup } from '../port.js';
import { LOCK_NS, inTransaction, serverError, unavailable } from './pool.js';

const DAY_MS = 86_400_000;

/** SQLSTATE of a statement cancelled: by statement_timeout, or by someone's request. */
const QUERY_CANCELED = '57014';

// The database's own clock, in epoch ms: servers whose clocks disagree still
// agree on how long a record has gone untouched.
const NOW_MS = '(extract(epoch FROM clock_timestamp()) * 1000)::bigint';

/**
 * A step of an erasure: `remove` (a DELETE of events), the erasure's record
 * (parameter `record`) touched, and the insert_ids of the deleted events
 * freed, in one statement that answers how many events went.
 */
function erasing(remove: string, record: number): string {
  return `WITH gone AS (
      ${remove}
      RETURNING source_id, insert_id
    ), touched AS (
      UPDATE pending_erasures SET touched_at = ${NOW_MS} WHERE id = $${record}
    ), released AS (
      DELETE FROM insert_ids i USING gone g
      WHERE g.insert_id IS NOT NULL AND i.source_id = g.source_id AND i.insert_id = g.insert_id
    )
    SELECT count(*)::int AS n FROM gone`;
}

const SQL = {
  lock: 'SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))',
  linked: 'SELECT person_id AS id FROM person_links WHERE project_id = $1 AND distinct_id = $2',
  current: 'SELECT coalesce(merged_into, id) AS id FROM persons WHERE project_id = $1 AND id = $2',
  merged: 'SELECT id FROM persons WHERE project_id = $1 AND merged_into = $2',
  links: 'SELECT distinct_id FROM person_links WHERE project_id = $1 AND person_id = ANY($2::text[]) ORDER BY distinct_id COLLATE "C"',
  // Every event row of the project stored so far has a seq at or below this, and every later one a higher seq.
  newest: "SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence('events', 'seq')::regclass), 0) AS seq",
  // The distinct_ids and the person ids, each naming the person of the erasure ($3).
  suppress: `WITH ids AS (
      INSERT INTO suppressed_ids (project_id, distinct_id, created_at, person_id)
      SELECT $1, d, $4, $3 FROM unnest($2::text[]) AS d
      ON CONFLICT (project_id, distinct_id) DO UPDATE SET person_id = excluded.person_id
    )
    INSERT INTO suppressed_persons (project_id, person_id, erased_person_id, created_at)
    SELECT $1, p, $3, $4 FROM unnest($5::text[]) AS p ON CONFLICT DO NOTHING`,
  forget: `WITH links AS (DELETE FROM person_links WHERE project_id = $1 AND person_id = ANY($2::text[])),
    traits AS (DELETE FROM person_traits WHERE project_id = $1 AND person_id = ANY($2::text[]))
    DELETE FROM persons WHERE project_id = $1 AND id = ANY($2::text[])`,
  span: 'SELECT min("timestamp") AS lo, max("timestamp") AS hi FROM events WHERE project_id = $1',
  record: `INSERT INTO pending_erasures (project_id, person_ids, through_seq, touched_at)
    VALUES ($1, $2::text[], $3, ${NOW_MS}) RETURNING id`,
  // A time range within one day: each statement reads that range of the project through events_project_time.
  deleteRange: erasing(
    `DELETE FROM events WHERE project_id = $1 AND "timestamp" >= $2 AND "timestamp" < $3
      AND person_id = ANY($4::text[]) AND seq <= $5`,
    6,
  ),
  // One source's rows of a millisecond too busy for deleteRange, by seq: each
  // statement reads that range of seqs through events_source_time.
  sources: 'SELECT id FROM sources WHERE project_id = $1 ORDER BY id',
  seqsAt: 'SELECT min(seq) AS lo, max(seq) AS hi FROM events WHERE source_id = $1 AND "timestamp" = $2',
  deleteSeqs: erasing(
    `DELETE FROM events WHERE source_id = $1 AND "timestamp" = $2 AND seq >= $3 AND seq < $4
      AND project_id = $5 AND person_id = ANY($6::text[])`,
    7,
  ),
  // A distinct_id, and the person ids of its erasure with it.
  unsuppress: `WITH gone AS (
      DELETE FROM suppressed_ids WHERE project_id = $1 AND distinct_id = $2 RETURNING person_id
    ), persons AS (
      DELETE FROM suppressed_persons s USING gone g WHERE s.project_id = $1 AND s.erased_person_id = g.person_id
    )
    SELECT count(*)::int AS n FROM gone`,
  // A person id, and the other person ids of its erasure.
  unsuppressPerson: `WITH erasure AS (
      SELECT erased_person_id FROM suppressed_persons WHERE project_id = $1 AND person_id = $2
    ), gone AS (
      DELETE FROM suppressed_persons s USING erasure e WHERE s.project_id = $1 AND s.erased_person_id = e.erased_person_id
    )
    SELECT count(*)::int AS n FROM erasure`,
  done: 'DELETE FROM pending_erasures WHERE id = $1',
  stale: `SELECT id, project_id AS "projectId", person_ids AS "personIds", through_seq AS "throughSeq"
    FROM pending_erasures WHERE touched_at <= ${NOW_MS} - $1 ORDER BY id`,
} as const;

/** Person erasure on PostgreSQL (the contract is on ErasureStore, in the port). */
export class PgErasure {
  constructor(
    private readonly pool: pg.Pool,
    /** The pool's statement_timeout, which sizes the ranges of deletion. */
    private readonly statementMs: number,
  ) {}

  async erasePerson(projectId: string, lookup: PersonLookup, opts: { suppress: boolean; now: number }): Promise<ErasedPerson | null> {
    const f = await inTransaction(this.pool, async (c) => {
      const q = async <R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R[]> => (await run<R>(c, text, values)).rows;
      await q(SQL.lock, [LOCK_NS.project, projectId]);
      const start = 'distinctId' in lookup ? (await q<{ id: string }>(SQL.linked, [projectId, lookup.distinctId]))[0]?.id : lookup.personId;
      const personId = start === undefined ? undefined : (await q<{ id: string }>(SQL.current, [projectId, start]))[0]?.id;
      if (personId === undefined) return null;
      const personIds = [personId, ...(await q<{ id: string }>(SQL.merged, [projectId, personId])).map((r) => r.id)];
      const distinctIds = (await q<{ distinct_id: string }>(SQL.links, [projectId, personIds])).map((r) => r.distinct_id);
      const [{ seq }] = (await q<{ seq: number }>(SQL.newest, [])) as [{ seq: number }];
      if (opts.suppress) await q(SQL.suppress, [projectId, distinctIds, personId, opts.now, personIds]);
      await q(SQL.forget, [projectId, personIds]);
      const [{ id }] = (await q<{ id: number }>(SQL.record, [projectId, personIds, seq])) as [{ id: number }];
      return { personId, distinctIds, pending: { id, projectId, personIds, throughSeq: seq } };
    });
    if (f === null) return null;
    const { eventsDeleted } = await this.finishErasure(f.pending);
    return { personId: f.personId, distinctIds: f.distinctIds, eventsDeleted, suppressed: opts.suppress };
  }

  async staleErasures(idleMs: number): Promise<PendingErasure[]> {
    return (await run<PendingErasure>(this.pool, SQL.stale, [idleMs])).rows;
  }

  /**
   * Time ranges of the project, a day at most, one statement each; a
   * millisecond too busy for one statement goes source by source, in ranges
   * of seqs. Then the record.
   */
  async finishErasure(e: PendingErasure, opts: { stopping?: () => boolean } = {}): Promise<{ eventsDeleted: number; done: boolean }> {
    let eventsDeleted = 0;
    const [span] = (await run<{ lo: number | null; hi: number | null }>(this.pool, SQL.span, [e.projectId])).rows;
    if (span?.lo != null && span.hi != null) {
      const pacing = { timeoutMs: this.statementMs, now: () => performance.now(), ...opts };
      const busyMs = async (ms: number): Promise<boolean> => {
        for (const { id: source } of (await run<{ id: string }>(this.pool, SQL.sources, [e.projectId])).rows) {
          const [seqs] = (await run<{ lo: string | null; hi: string | null }>(this.pool, SQL.seqsAt, [source, ms])).rows;
          if (seqs?.lo == null || seqs.hi == null) continue;
          // Rows stored after the erasure began are not the erasure's.
          const end = Math.min(Number(seqs.hi), e.throughSeq) + 1;
          const complete = await deleteInSeqRanges(Number(seqs.lo), end, pacing, async (from, to) => {
            const values = [source, ms, from, to, e.projectId, e.personIds, e.id];
            eventsDeleted += (await run<{ n: number }>(this.pool, SQL.deleteSeqs, values)).rows[0]!.n;
          });
          if (!complete) return false;
        }
        return true;
      };
      const complete = await deleteInRanges(
        Math.floor(span.lo / DAY_MS) * DAY_MS,
        span.hi,
        pacing,
        async (from, to) => {
          const values = [e.projectId, from, to, e.personIds, e.throughSeq, e.id];
          eventsDeleted += (await run<{ n: number }>(this.pool, SQL.deleteRange, values)).rows[0]!.n;
        },
        busyMs,
      );
      if (!complete) return { eventsDeleted, done: false };
    }
    await run(this.pool, SQL.done, [e.id]);
    return { eventsDeleted, done: true };
  }

  async unsuppress(projectId: string, lookup: PersonLookup): Promise<boolean> {
    const [text, id] = 'distinctId' in lookup ? [SQL.unsuppress, lookup.distinctId] : [SQL.unsuppressPerson, lookup.personId];
    return (await run<{ n: number }>(this.pool, text, [projectId, id])).rows[0]!.n > 0;
  }
}

/** How the ranges of an erasure are sized: statements aim at a fifth of the timeout. */
export interface RangePacing {
  /** The statement_timeout in force, in ms; 0 for none. */
  timeoutMs: number;
  /** A monotonic clock in ms (performance.now). */
  now: () => number;
  stopping?: () => boolean;
}

/**
 * Calls `remove(from, to)` over [start, last] in ranges that never cross a
 * UTC day, so each statement reads one day's partition, and reads about as
 * much as a fifth of the statement timeout allows (see inPacedRanges). A
 * single millisecond that still takes the whole timeout goes to `busyMs`,
 * which deletes it some other way (false: stopped); without one, it ends the
 * erasure. False when `stopping` ended it early.
 */
export function deleteInRanges(
  start: number,
  last: number,
  pacing: RangePacing,
  remove: (from: number, to: number) => Promise<void>,
  busyMs?: (ms: number) => Promise<boolean>,
): Promise<boolean> {
  return inPacedRanges(start, last + 1, { widest: DAY_MS, endOf: (from) => (Math.floor(from / DAY_MS) + 1) * DAY_MS }, pacing, remove, busyMs);
}

/** Calls `remove(from, to)` over the seqs [start, end), paced as inPacedRanges; a single seq that takes the whole timeout ends it. */
export function deleteInSeqRanges(start: number, end: number, pacing: RangePacing, remove: (from: number, to: number) => Promise<void>): Promise<boolean> {
  return inPacedRanges(start, end, { widest: Number.MAX_SAFE_INTEGER, endOf: () => end }, pacing, remove);
}

/**
 * Calls `remove(from, to)` over [start, end) in ranges no wider than
 * `widest` and ending at `endOf(from)` at the latest, the next range sized
 * by how long the last one took (at most four times as wide, so an empty
 * stretch after a busy one is a dozen statements back to the widest). A
 * range the server cancels for taking the whole timeout is halved and tried
 * again, and none grows until past it; a range of one that is cancelled goes
 * to `one`, or ends the run. A cancel that came sooner (pg_cancel_backend)
 * is someone's request and ends the run. False when `stopping` ended it.
 */
async function inPacedRanges(
  start: number,
  end: number,
  shape: { widest: number; endOf: (from: number) => number },
  pacing: RangePacing,
  remove: (from: number, to: number) => Promise<void>,
  one?: (at: number) => Promise<boolean>,
): Promise<boolean> {
  // Without a timeout (0), a second per statement.
  const targetMs = pacing.timeoutMs > 0 ? pacing.timeoutMs / 5 : 1000;
  let width = shape.widest;
  // Up to the end of the last range cancelled, ranges do not grow again: each
  // cancel costs a whole timeout, and the density that caused it is still ahead.
  let holdUntil = -Infinity;
  for (let from = start; from < end; ) {
    if (pacing.stopping?.() === true) return false;
    const to = Math.min(from + width, shape.endOf(from));
    const began = pacing.now();
    try {
      await remove(from, to);
    } catch (err) {
      const tookAll = pacing.now() - began >= pacing.timeoutMs * 0.9;
      if (serverError(err)?.code !== QUERY_CANCELED || !tookAll || (to - from <= 1 && one === undefined)) throw err;
      holdUntil = Math.max(holdUntil, to);
      if (to - from > 1) {
        width = Math.ceil((to - from) / 2);
        continue;
      }
      if (!(await one!(from))) return false;
      // The cancels came down to this one; what lies past it may grow again.
      holdUntil = -Infinity;
    }
    const took = Math.max(pacing.now() - began, 1);
    const paced = Math.max(1, Math.min(shape.widest, Math.round((to - from) * Math.min(4, targetMs / took))));
    width = to < holdUntil ? Math.min(paced, to - from) : paced;
    from = to;
  }
  return true;
}

async function run<R extends pg.QueryResultRow>(c: pg.Pool | pg.PoolClient, text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
  try {
    return await c.query<R>(text, values);
  } catch (e) {
    throw unavailable(e);
  }
}
