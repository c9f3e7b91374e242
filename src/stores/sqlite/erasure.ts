import type { PendingErasure } from '../port.js';
import { EventDeletion } from './event-deletion.js';
import type { Db } from './open.js';

/** Event rows an erasure reads per transaction when it deletes a person's events. */
const ERASE_ROWS_PER_STEP = 20_000;

/**
 * What SQLite does its own way in an erasure (the rules are in
 * domain/erasure.ts): events are deleted a range of seqs per transaction of the store's, so writers wait
 * for one short range at most.
 */
export class SqliteErasure {
  private readonly deletion: EventDeletion;
  private readonly eventsIn;

  constructor(
    db: Db,
    private readonly transaction: <T>(fn: () => Promise<T>) => Promise<T>,
  ) {
    this.deletion = new EventDeletion(db);
    this.eventsIn = db.prepare('SELECT seq FROM events WHERE seq > ? AND seq <= ? AND project_id = ? AND person_id IN (SELECT value FROM json_each(?))').pluck();
  }

  async deleteEvents(e: PendingErasure, steps: { touch: () => Promise<void>; stopping?: () => boolean }): Promise<{ eventsDeleted: number; done: boolean }> {
    let eventsDeleted = 0;
    const ids = JSON.stringify(e.personIds);
    for (let after = 0; after < e.arrivedThrough; after += ERASE_ROWS_PER_STEP) {
      if (steps.stopping?.() === true) return { eventsDeleted, done: false };
      const upTo = Math.min(e.arrivedThrough, after + ERASE_ROWS_PER_STEP);
      eventsDeleted += await this.transaction(async () => {
        await steps.touch();
        return this.deletion.delete(this.eventsIn.all(after, upTo, e.projectId, ids) as number[]);
      });
    }
    return { eventsDeleted, done: true };
  }
}
