import type { Db } from './open.js';

/** Events past the indexed mark that make a commit index them. */
const MERGE_EVERY = 2048;

/**
 * The events of each source by minute of their timestamp, kept as an index
 * with a tail: the map event pages (event-pages.ts) read, newest or oldest
 * first, in place of an index on the events table.
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
    db: Db,
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
}
