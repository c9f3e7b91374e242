import { sql } from 'kysely';
import type { EventPosition, EventRow, PositionedPageQuery, SqlEngine } from '../port.js';
import type { Tuning } from '../sql/defaults.js';
import { eventRows } from '../sql/event-pages.js';
import type { Db } from './open.js';

/** A candidate: seq, timestamp, event name, distinct_id. */
type Key = [seq: number, timestamp: number, event: string, distinctId: string | null];

const MINUTE = 60_000;

/**
 * How far from its id time an event's row is looked for, nearest first,
 * before the whole table is read: a request is stamped when it arrives and
 * written when its body has been read and its turn has come (a slow body
 * takes seconds), and processes sharing the file may disagree a little on
 * the time. Each step reads the rows received within that many ms.
 */
const STRAY_STEPS_MS = [0, 1_000, 60_000];

/**
 * Event pages on SQLite, in (timestamp, seq) order either way, with the
 * minute index (event-minute-index.ts) as the map: the events table has no
 * index by source and time (it would cost each commit a write at dozens of
 * places), so a page reads whole minutes from the index, nearest first,
 * until it holds enough, plus the few thousand events past the indexed mark.
 * Each page is one read transaction of its own, so an export of any length
 * never holds a snapshot (and the WAL) for longer than a page. The rows are
 * read by seq with the query written once (eventRows), compiled here and run
 * in that same transaction.
 */
export class SqliteEventPages implements Pick<Tuning, 'eventPage' | 'eventPosition'> {
  private readonly s;
  /** For tests: cursor lookups that had to read the whole table. */
  readonly stats = { wholeTableReads: 0 };

  constructor(
    private readonly db: Db,
    engine: SqlEngine,
  ) {
    // One parameter, the seqs as a JSON array: one prepared statement whatever the page's length.
    const rows = eventRows(engine).where(sql<boolean>`e.seq IN (SELECT value FROM json_each(${'[]'}))`).compile();
    this.s = {
      mark: db.prepare('SELECT through FROM event_minutes_state').pluck(),
      tail: db.prepare('SELECT seq, timestamp, event, distinct_id FROM events WHERE seq > ? AND source_id = ?').raw(),
      minuteAfter: db.prepare('SELECT minute FROM event_minute_runs WHERE source_id = ? AND minute > ? ORDER BY minute LIMIT 1').pluck(),
      minuteBefore: db.prepare('SELECT minute FROM event_minute_runs WHERE source_id = ? AND minute < ? ORDER BY minute DESC LIMIT 1').pluck(),
      inMinute: db
        .prepare(
          `SELECT e.seq, e.timestamp, e.event, e.distinct_id FROM event_minute_runs m, json_each(m.seqs) j JOIN events e ON e.seq = j.value
           WHERE m.source_id = ? AND m.minute = ?`,
        )
        .raw(),
      rows: db.prepare(rows.sql),
      cursor: db.prepare('SELECT seq, timestamp FROM events WHERE id = ? AND source_id = ?'),
      cursorIn: db.prepare('SELECT seq, timestamp FROM events WHERE seq >= ? AND seq < ? AND id = ? AND source_id = ?'),
      // Two subqueries: SQLite reads a lone min() or max() off the end of the table, not both at once.
      seqs: db.prepare('SELECT (SELECT min(seq) FROM events) AS lo, (SELECT max(seq) FROM events) AS hi'),
      // Placeholders of deleted events (event-deletion.ts) have no time: the search steps over them.
      atOrAfter: db.prepare("SELECT seq, received_at FROM events WHERE seq >= ? AND source_id <> '' ORDER BY seq LIMIT 1"),
    };
  }

  async eventPage(q: PositionedPageQuery): Promise<EventRow[]> {
    return this.db.transaction(() => {
      const keys = this.pageKeys(q);
      const rows = this.s.rows.all(JSON.stringify(keys.map((k) => k[0]))) as EventRow[];
      const bySeq = new Map(rows.map((r) => [r.seq, r]));
      return keys.map((k) => bySeq.get(k[0])!);
    })();
  }

  /**
   * An event id is a UUIDv7 whose first 48 bits are the event's received_at,
   * and seqs follow arrival nearly in order: a binary search over seqs finds
   * the rows received near that time, and only they are read, the nearest
   * first (STRAY_STEPS_MS). When that fails the whole table is read, so the
   * answer is always the same, only slower: for an id of another form or of
   * no event of the source, for an event written further out of order, and
   * for events around a step back of the clock (the search, misled by it,
   * may look in the wrong place for as long as the step lasted).
   */
  async eventPosition(sourceId: string, eventId: string): Promise<EventPosition | null> {
    const at = receivedAtOf(eventId);
    return this.db.transaction(() => {
      const span = this.s.seqs.get() as { lo: number | null; hi: number | null };
      if (span.lo === null || span.hi === null) return null;
      let r: { seq: number; timestamp: number } | undefined;
      // Past 2^53 a seq read as a number is rounded, and the search could not move on.
      const searchable = at !== null && span.hi < Number.MAX_SAFE_INTEGER;
      for (const stray of searchable ? STRAY_STEPS_MS : []) {
        const from = this.firstReceivedFrom(at! - stray, span.lo, span.hi + 1);
        const to = this.firstReceivedFrom(at! + stray + 1, from, span.hi + 1);
        r = this.s.cursorIn.get(from, to, eventId, sourceId) as typeof r;
        if (r !== undefined) break;
      }
      if (r === undefined) {
        this.stats.wholeTableReads++;
        r = this.s.cursor.get(eventId, sourceId) as typeof r;
      }
      return r === undefined ? null : { timestamp: r.timestamp, seq: r.seq };
    })();
  }

  /** Where the rows received at `ms` or later begin, between lo and hi: a binary search that takes received_at to rise with seq. */
  private firstReceivedFrom(ms: number, lo: number, hi: number): number {
    while (lo < hi) {
      const mid = lo + Math.floor((hi - lo) / 2);
      const row = this.s.atOrAfter.get(mid) as { seq: number; received_at: number } | undefined;
      if (row === undefined || row.received_at >= ms) hi = mid;
      else lo = row.seq + 1;
    }
    return lo;
  }

  /** The page's candidates in order: whole minutes of the index, nearest first, merged with the tail. */
  private pageKeys(q: PositionedPageQuery): Key[] {
    const asc = q.order === 'asc';
    const keep = (k: Key): boolean =>
      (q.since === undefined || k[1] >= q.since) &&
      (q.until === undefined || k[1] < q.until) &&
      (q.after === null || (asc ? compare(k, q.after) > 0 : compare(k, q.after) < 0)) &&
      (q.event === undefined || k[2] === q.event) &&
      (q.distinctId === undefined || k[3] === q.distinctId);
    const tail = (this.s.tail.all(this.s.mark.get(), q.sourceId) as Key[]).filter(keep);
    const found: Key[] = [];
    // The minute just before the first one the page may hold, in its order.
    const start = this.startMinute(q);
    let minute = (asc ? this.s.minuteAfter : this.s.minuteBefore).get(q.sourceId, start) as number | undefined;
    let border: number | null = null;
    while (minute !== undefined && !pastRange(q, minute)) {
      for (const k of this.s.inMinute.all(q.sourceId, minute) as Key[]) if (keep(k)) found.push(k);
      // Every indexed event not read yet lies beyond this minute.
      border = asc ? (minute + 1) * MINUTE : minute * MINUTE;
      const b = border;
      const tailWithin = tail.filter((k) => (asc ? k[1] < b : k[1] >= b)).length;
      if (found.length + tailWithin >= q.limit) break;
      minute = (asc ? this.s.minuteAfter : this.s.minuteBefore).get(q.sourceId, minute) as number | undefined;
    }
    const exhausted = minute === undefined || pastRange(q, minute);
    const b = border;
    const all = found.concat(exhausted || b === null ? tail : tail.filter((k) => (asc ? k[1] < b : k[1] >= b)));
    all.sort(asc ? compareKeys : (x, y) => compareKeys(y, x));
    return all.slice(0, q.limit);
  }

  private startMinute(q: PositionedPageQuery): number {
    if (q.order === 'asc') {
      const from = Math.max(q.after?.timestamp ?? -Infinity, q.since ?? -Infinity);
      return from === -Infinity ? -Number.MAX_SAFE_INTEGER : Math.floor(from / MINUTE) - 1;
    }
    const from = Math.min(q.after?.timestamp ?? Infinity, q.until ?? Infinity);
    return from === Infinity ? Number.MAX_SAFE_INTEGER : Math.floor(from / MINUTE) + 1;
  }
}

/** Whether a minute lies wholly outside the query's time range, on the side the page walks towards. */
function pastRange(q: PositionedPageQuery, minute: number): boolean {
  return q.order === 'asc' ? q.until !== undefined && minute * MINUTE >= q.until : q.since !== undefined && (minute + 1) * MINUTE <= q.since;
}

function compare(k: Key, c: EventPosition): number {
  return k[1] - c.timestamp || k[0] - c.seq;
}

function compareKeys(a: Key, b: Key): number {
  return a[1] - b[1] || a[0] - b[0];
}

/** The received_at a UUIDv7 event id carries, or null for an id of another form. */
export function receivedAtOf(eventId: string): number | null {
  const m = /^([0-9a-f]{8})-([0-9a-f]{4})-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i.exec(eventId);
  return m === null ? null : parseInt(m[1]! + m[2]!, 16);
}
