import { insertIdsOf } from './insert-ids.js';
import type { Db } from './open.js';

/**
 * Deletes events by seq without ever letting a seq be used twice. Events
 * are keyed by rowid, and SQLite gives a new row the highest rowid plus one:
 * deleting the newest event would hand its seq to the next one, which the
 * insert_id table and the minute index (whose marks are seqs) would take for
 * a row they had already seen. So when the newest event goes, a placeholder row
 * takes the next seq first: it belongs to no source (source_id ''), so no
 * read ever returns it, and a later deletion removes it once it is no longer
 * the newest row (placeholders()).
 */
export class EventDeletion {
  private readonly s;
  private readonly insertIds;

  constructor(db: Db) {
    this.insertIds = insertIdsOf(db);
    this.s = {
      newest: db.prepare('SELECT max(seq) FROM events').pluck(),
      placeholder: db.prepare(
        `INSERT INTO events (seq, id, project_id, source_id, event, person_id, timestamp, received_at, properties)
         VALUES (?, '', '', '', '', '', 0, 0, '{}')`,
      ),
      remove: db.prepare('DELETE FROM events WHERE seq IN (SELECT value FROM json_each(?)) RETURNING seq, source_id, insert_id').raw(),
      mark: db.prepare('SELECT through FROM event_minutes_state').pluck(),
      tailPlaceholders: db.prepare("SELECT seq FROM events WHERE seq > ? AND source_id = ''").pluck(),
      runPlaceholders: db.prepare("SELECT j.value FROM event_minute_runs m, json_each(m.seqs) j WHERE m.source_id = ''").pluck(),
      dropRuns: db.prepare("DELETE FROM event_minute_runs WHERE source_id = ''"),
    };
  }

  /** Deletes the events with these seqs (inside the caller's write transaction); returns how many there were. */
  delete(seqs: number[]): number {
    if (seqs.length === 0) return 0;
    const newest = this.s.newest.get() as number;
    if (seqs.includes(newest)) this.s.placeholder.run(newest + 1);
    const gone = this.s.remove.all(JSON.stringify(seqs)) as [number, string, string | null][];
    const freed = gone.flatMap(([seq, sourceId, insertId]) => (insertId === null ? [] : [{ seq, sourceId, insertId }]));
    // Their insert_ids are free again: the rows were the truth, and the connection's table forgets them at COMMIT.
    if (freed.length > 0) this.insertIds.deleted(freed);
    return gone.length;
  }

  /** Removes the placeholders that are no longer the newest row. */
  prunePlaceholders(): void {
    const newest = this.s.newest.get() as number;
    const inRuns = this.s.runPlaceholders.all() as number[];
    const old = [...inRuns, ...(this.s.tailPlaceholders.all(this.s.mark.get()) as number[])].filter((s) => s < newest);
    if (old.length === 0) return;
    // Placeholders hold no insert_id: what RETURNING gives back needs no bookkeeping.
    this.s.remove.all(JSON.stringify(old));
    // A run listing the placeholder that is still the newest row stays, so it is found next time.
    if (inRuns.every((s) => s < newest)) this.s.dropRuns.run();
  }
}
