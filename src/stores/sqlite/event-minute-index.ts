import type { Db } from './open.js';

/** Events past the indexed mark that make a commit index them. */
const MERGE_EVERY = 2048;

/** A row of the index or of the tail: the event's seq and its timestamp. */
type SeqAndTime = [seq: number, timestamp: number];

const newestFirst = (a: SeqAndTime, b: SeqAndTime): number => b[1] - a[1] || b[0] - a[0];

/**
 * The events of each source by minute of their timestamp, for "newest first"
 * (`events list`), kept as an index with a tail.
 *
 * Why not an index on the events table: timestamps arrive spread over the
 * last hours, so each commit added rows at dozens of places in it, one page
 * each. For a commit of 25 one-item requests that was 21 of its 31 pages
 * (docs/design.md). Here a commit writes only the event rows, which append.
 * Once MERGE_EVERY events have gathered past the mark, the commit that sees
 * it indexes them all and moves the mark.
 *
 * A merge writes one row per source and minute among its events (a run),
 * which lists that minute's seqs as a JSON array, rather than one row per
 * event: with timestamps over the last hour, 2,048 events make about 60
 * runs. SQLite groups and writes them in one statement.
 *
 * Nothing lives in memory: the mark is on disk and moves in the same
 * transaction as the rows it covers, so a crash, a rollback or another
 * process writing the same file needs no repair. Readers take the events
 * past the mark (a few thousand, read by seq) from the events table itself.
 *
 * Relies on seqs only growing: SQLite gives a new row the highest seq plus
 * one, and deleting events (retention, erasure) never frees the highest seq
 * (event-deletion.ts). Runs may list seqs of deleted events; reads join them away.
 */
export class EventMinuteIndex {
  private readonly s;

  constructor(
    private readonly db: Db,
    private readonly mergeEvery = MERGE_EVERY,
  ) {
    this.s = {
      due: db.prepare('SELECT (SELECT max(seq) FROM events) AS last, through FROM event_minutes_state'),
      // A run's key (source, minute, highest seq) is unique, since no two
      // merges cover the same seqs.
      merge: db.prepare(
        `INSERT INTO event_minute_runs (source_id, minute, last_seq, seqs)
         SELECT source_id, timestamp / 60000, max(seq), json_group_array(seq) FROM events
         WHERE seq > ? AND seq <= ? GROUP BY 1, 2`,
      ),
      setMark: db.prepare('UPDATE event_minutes_state SET through = ?'),
      mark: db.prepare('SELECT through FROM event_minutes_state').pluck(),
      tail: db.prepare('SELECT seq, timestamp FROM events WHERE seq > ? AND source_id = ?').raw(),
      minuteBefore: db.prepare('SELECT minute FROM event_minute_runs WHERE source_id = ? AND minute < ? ORDER BY minute DESC LIMIT 1').pluck(),
      newestInMinute: db
        .prepare(
          `SELECT e.seq, e.timestamp FROM event_minute_runs m, json_each(m.seqs) j JOIN events e ON e.seq = j.value
           WHERE m.source_id = ? AND m.minute = ? ORDER BY e.timestamp DESC, e.seq DESC LIMIT ?`,
        )
        .raw(),
    };
  }

  /**
   * Called last in every write transaction, which holds the write lock:
   * indexes the tail when it has grown to MERGE_EVERY events.
   */
  endWrite(): void {
    const { last, through } = this.s.due.get() as { last: number | null; through: number };
    if (last === null || last - through < this.mergeEvery) return;
    this.s.merge.run(through, last);
    this.s.setMark.run(last);
  }

  /** The seqs of a source's newest `limit` events, by timestamp then seq, newest first. */
  newest(sourceId: string, limit: number): number[] {
    if (limit <= 0) return [];
    // One read transaction: a merge by another process between two reads
    // would otherwise show its events twice, or not at all.
    return this.db.transaction(() => {
      const tail = this.s.tail.all(this.s.mark.get(), sourceId) as SeqAndTime[];
      tail.sort(newestFirst);
      const indexed: SeqAndTime[] = [];
      let tailNewer = 0;
      let minute = this.s.minuteBefore.get(sourceId, Number.MAX_SAFE_INTEGER) as number | undefined;
      while (minute !== undefined) {
        for (const row of this.s.newestInMinute.all(sourceId, minute, limit) as SeqAndTime[]) indexed.push(row);
        // Every indexed event not read yet is older than this minute: once
        // `limit` events are this minute's or newer, they are the answer.
        const from = minute * 60_000;
        while (tailNewer < tail.length && tail[tailNewer]![1] >= from) tailNewer++;
        if (indexed.length + tailNewer >= limit) break;
        minute = this.s.minuteBefore.get(sourceId, minute) as number | undefined;
      }
      const all = indexed.concat(tail).sort(newestFirst);
      return all.slice(0, limit).map(([seq]) => seq);
    })();
  }
}
