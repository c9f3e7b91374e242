import type { ExpiryPlan, ExpiryStep } from '../port.js';
import { EventDeletion } from './event-deletion.js';
import type { Db } from './open.js';

const MINUTE = 60_000;

/**
 * Expired events on SQLite, before each project's cutoff in the plan, found
 * through the minute index (whole minutes that lie before the cutoff, the
 * minute the cutoff falls in, and the events past the indexed mark),
 * deleted a batch per transaction.
 */
export class SqliteRetention {
  private readonly s;
  private readonly deletion: EventDeletion;

  constructor(db: Db) {
    this.deletion = new EventDeletion(db);
    this.s = {
      sources: db.prepare('SELECT id FROM sources WHERE project_id = ?').pluck(),
      mark: db.prepare('SELECT through FROM event_minutes_state').pluck(),
      expiredRuns: db.prepare('SELECT minute, last_seq, seqs FROM event_minute_runs WHERE source_id = ? AND minute < ? ORDER BY minute LIMIT ?'),
      dropRun: db.prepare('DELETE FROM event_minute_runs WHERE source_id = ? AND minute = ? AND last_seq = ?'),
      boundary: db
        .prepare(
          `SELECT e.seq FROM event_minute_runs m, json_each(m.seqs) j JOIN events e ON e.seq = j.value
           WHERE m.source_id = ? AND m.minute = ? AND e.timestamp < ?`,
        )
        .pluck(),
      tail: db.prepare('SELECT seq FROM events WHERE seq > ? AND source_id = ? AND timestamp < ?').pluck(),
    };
  }

  /** One step, inside a write transaction the caller holds: at most about `batch` events. */
  step(plan: ExpiryPlan, batch: number): ExpiryStep {
    this.deletion.prunePlaceholders();
    let deleted = 0;
    for (const p of plan.cutoffs) {
      for (const sourceId of this.s.sources.all(p.projectId) as string[]) {
        const r = this.expireSource(sourceId, p.before, batch - deleted);
        deleted += r.deleted;
        if (r.more || deleted >= batch) return { deleted, dropped: 0, more: true };
      }
    }
    return { deleted, dropped: 0, more: false };
  }

  private expireSource(sourceId: string, cutoff: number, budget: number): { deleted: number; more: boolean } {
    const cutoffMinute = Math.floor(cutoff / MINUTE);
    let deleted = 0;
    // A run of a minute before the cutoff's holds only expired events: it goes whole.
    const limit = Math.max(1, Math.ceil(budget / 64));
    const runs = this.s.expiredRuns.all(sourceId, cutoffMinute, limit) as Run[];
    for (const run of runs) {
      deleted += this.deletion.delete(JSON.parse(run.seqs) as number[]);
      this.s.dropRun.run(sourceId, run.minute, run.last_seq);
      if (deleted >= budget) return { deleted, more: true };
    }
    if (runs.length === limit) return { deleted, more: true };
    deleted += this.deletion.delete(this.s.boundary.all(sourceId, cutoffMinute, cutoff) as number[]);
    deleted += this.deletion.delete(this.s.tail.all(this.s.mark.get(), sourceId, cutoff) as number[]);
    return { deleted, more: false };
  }
}

interface Run {
  minute: number;
  last_seq: number;
  seqs: string;
}
