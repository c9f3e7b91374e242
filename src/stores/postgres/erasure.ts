import type pg from 'pg';
import type { PendingErasure } from '../port.js';
import { rowsOf, serverError } from './pool.js';

const DAY_MS = 86_400_000;

/** SQLSTATE of a statement cancelled: by statement_timeout, or by someone's request. */
const QUERY_CANCELED = '57014';

/** A DELETE of events that also frees the insert_ids of the events it deleted, and answers how many went. */
function erasing(remove: string): string {
  return `WITH gone AS (
      ${remove}
      RETURNING source_id, insert_id
    ), released AS (
      DELETE FROM insert_ids i USING gone g
      WHERE g.insert_id IS NOT NULL AND i.source_id = g.source_id AND i.insert_id = g.insert_id
    )
    SELECT count(*)::int AS n FROM gone`;
}

const SQL = {
  span: 'SELECT min("timestamp") AS lo, max("timestamp") AS hi FROM events WHERE project_id = $1',
  // A time range within one day: each statement reads that range of the project through events_project_time.
  deleteRange: erasing(
    `DELETE FROM events WHERE project_id = $1 AND "timestamp" >= $2 AND "timestamp" < $3
      AND person_id = ANY($4::text[]) AND seq <= $5`,
  ),
  // One source's rows of a millisecond too busy for deleteRange, by seq: each
  // statement reads that range of seqs through events_source_time.
  sources: 'SELECT id FROM sources WHERE project_id = $1 ORDER BY id',
  seqsAt: 'SELECT min(seq) AS lo, max(seq) AS hi FROM events WHERE source_id = $1 AND "timestamp" = $2',
  deleteSeqs: erasing(
    `DELETE FROM events WHERE source_id = $1 AND "timestamp" = $2 AND seq >= $3 AND seq < $4
      AND project_id = $5 AND person_id = ANY($6::text[])`,
  ),
} as const;

/**
 * Time ranges of the project, a day at most, one statement each; a
 * millisecond too busy for one statement goes source by source, in ranges
 * of seqs. The record is touched before each statement. The rules are
 * domain/erasure.ts's; this is only how PostgreSQL deletes the events, in
 * statements sized to its statement timeout.
 */
export async function deleteErased(
  pool: pg.Pool,
  statementMs: number,
  e: PendingErasure,
  steps: { touch: () => Promise<void>; stopping?: () => boolean },
): Promise<{ eventsDeleted: number; done: boolean }> {
  let eventsDeleted = 0;
  const count = async (text: string, values: unknown[]): Promise<void> => {
    await steps.touch();
    eventsDeleted += (await rowsOf<{ n: number }>(pool, text, values))[0]!.n;
  };
  const [span] = await rowsOf<{ lo: number | null; hi: number | null }>(pool, SQL.span, [e.projectId]);
  if (span?.lo == null || span.hi == null) return { eventsDeleted, done: true };
  const pacing = { timeoutMs: statementMs, now: () => performance.now(), stopping: steps.stopping };
  const busyMs = async (ms: number): Promise<boolean> => {
    for (const { id: source } of await rowsOf<{ id: string }>(pool, SQL.sources, [e.projectId])) {
      const [seqs] = await rowsOf<{ lo: string | null; hi: string | null }>(pool, SQL.seqsAt, [source, ms]);
      if (seqs?.lo == null || seqs.hi == null) continue;
      // Rows stored after the erasure began are not the erasure's.
      const end = Math.min(Number(seqs.hi), e.arrivedThrough) + 1;
      const complete = await deleteInSeqRanges(Number(seqs.lo), end, pacing, (from, to) =>
        count(SQL.deleteSeqs, [source, ms, from, to, e.projectId, e.personIds]));
      if (!complete) return false;
    }
    return true;
  };
  const complete = await deleteInRanges(
    Math.floor(span.lo / DAY_MS) * DAY_MS,
    span.hi,
    pacing,
    (from, to) => count(SQL.deleteRange, [e.projectId, from, to, e.personIds, e.arrivedThrough]),
    busyMs,
  );
  return { eventsDeleted, done: complete };
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
