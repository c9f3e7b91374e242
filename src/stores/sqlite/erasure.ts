import { sql } from 'kysely';
import type { PendingErasure } from '../port.js';
import type { ErasureEngine } from '../sql/erasure.js';
import type { SqlEngine } from '../sql/engine.js';
import { EventDeletion } from './event-deletion.js';
import type { Db } from './open.js';
import { personLinkCacheOf } from './person-link-cache.js';

/** Event rows an erasure reads per transaction when it deletes a person's events. */
const ERASE_ROWS_PER_STEP = 20_000;

/**
 * What SQLite does its own way in an erasure (the rules are in
 * sql/erasure.ts): transactions in the store's turn (`transaction`, whose
 * single writer lock is the project lock here), the wall clock, ids as JSON,
 * and events deleted a range of rows per transaction, so writers wait for
 * one short range at most.
 */
export function sqliteErasure(db: Db, engine: SqlEngine, transaction: <T>(fn: () => Promise<T>) => Promise<T>): ErasureEngine {
  const deletion = new EventDeletion(db);
  const links = personLinkCacheOf(db);
  const eventsIn = db.prepare('SELECT seq FROM events WHERE seq > ? AND seq <= ? AND project_id = ? AND person_id IN (SELECT value FROM json_each(?))').pluck();
  return {
    writing: (fn) => transaction(() => fn(engine.db)),
    newestSeq: async (trx) => (await sql<{ seq: number }>`SELECT coalesce(max(seq), 0) AS seq FROM events`.execute(trx)).rows[0]!.seq,
    // Every process on one file runs on one machine, under one clock.
    clock: () => sql.val(Date.now()),
    personIdsColumn: (ids) => JSON.stringify(ids),
    personIdsOf: (column) => JSON.parse(column as string) as string[],
    forgot(projectId, distinctIds, personIds) {
      // This connection's cache of links must not serve them again (dropped when the transaction commits).
      for (const d of distinctIds) links.link(projectId, d);
      for (const p of personIds) links.merge(projectId, p);
    },
    async deleteEvents(e: PendingErasure, steps) {
      let eventsDeleted = 0;
      const ids = JSON.stringify(e.personIds);
      for (let after = 0; after < e.throughSeq; after += ERASE_ROWS_PER_STEP) {
        if (steps.stopping?.() === true) return { eventsDeleted, done: false };
        const upTo = Math.min(e.throughSeq, after + ERASE_ROWS_PER_STEP);
        eventsDeleted += await transaction(async () => {
          await steps.touch();
          return deletion.delete(eventsIn.all(after, upTo, e.projectId, ids) as number[]);
        });
      }
      return { eventsDeleted, done: true };
    },
  };
}
