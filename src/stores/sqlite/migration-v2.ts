import { createHash } from 'node:crypto';
import type { Db } from './open.js';

// FROZEN: schema version 2, as shipped. It imports nothing of the live code
// (insert-id-slots.ts keeps its own copy of the slot function and probing):
// a shipped migration must do tomorrow exactly what it did the day it shipped.
// Never edit this file; a change to the schema is a new migration.

/** Slots are integers below 2^53. */
const SLOT_SPACE = 2 ** 53;

/** The first 53 bits of SHA-256 over the source and the insert_id: the slot a pair starts looking at. */
function startSlot(sourceId: string, insertId: string): number {
  const d = createHash('sha256').update(`${sourceId}\u0000${insertId}`).digest();
  return d.readUIntBE(0, 6) * 32 + (d[6]! >> 3);
}

const following = (slot: number): number => (slot + 1 === SLOT_SPACE ? 0 : slot + 1);

interface OldClaim {
  source_id: string;
  insert_id: string;
}

interface OldEvent extends OldClaim {
  seq: number;
}

/**
 * Version 2: insert_ids move to a hash table of integer slots, and events are
 * indexed by minute instead of by exact timestamp. A slot points at the row
 * that holds its pair's text (an event, or an identify claim); a slot taken
 * by another pair sends the search on to the next one (linear probing).
 */
export function moveToInsertIdSlots(db: Db): void {
  db.exec(`
    CREATE TABLE insert_id_slots (
      slot INTEGER PRIMARY KEY, event_seq INTEGER, claim_seq INTEGER,
      CHECK ((event_seq IS NULL) <> (claim_seq IS NULL))
    );
    CREATE TABLE identify_claims (seq INTEGER PRIMARY KEY, source_id TEXT NOT NULL, insert_id TEXT NOT NULL);
    DROP INDEX events_source_time;
    CREATE INDEX events_source_minute ON events (source_id, timestamp / 60000);
  `);
  const take = db.prepare('INSERT INTO insert_id_slots (slot, event_seq, claim_seq) VALUES (?, ?, ?) ON CONFLICT (slot) DO NOTHING');
  const holderOf = db.prepare(
    `SELECT coalesce(e.source_id, c.source_id) AS source_id, coalesce(e.insert_id, c.insert_id) AS insert_id
     FROM insert_id_slots s
     LEFT JOIN events e ON e.seq = s.event_seq
     LEFT JOIN identify_claims c ON c.seq = s.claim_seq
     WHERE s.slot = ?`,
  );
  const addClaim = db.prepare('INSERT INTO identify_claims (source_id, insert_id) VALUES (?, ?)');
  const claim = (sourceId: string, insertId: string, eventSeq: number | null, claimSeq: number | null): void => {
    for (let slot = startSlot(sourceId, insertId); ; slot = following(slot)) {
      if (take.run(slot, eventSeq, claimSeq).changes === 1) return;
      const holder = holderOf.get(slot) as OldClaim;
      if (holder.source_id === sourceId && holder.insert_id === insertId) {
        throw new Error(`insert_id ${insertId} is already stored for source ${sourceId}`);
      }
    }
  };
  // Read in chunks: better-sqlite3 cannot write while a read is still open,
  // and a large store must not be loaded whole.
  // Every event with an insert_id is the one stored copy of its pair.
  const events = db.prepare('SELECT seq, source_id, insert_id FROM events WHERE seq > ? AND insert_id IS NOT NULL ORDER BY seq LIMIT 10000');
  for (let rows = events.all(0) as OldEvent[]; rows.length > 0; rows = events.all(rows.at(-1)!.seq) as OldEvent[]) {
    for (const e of rows) claim(e.source_id, e.insert_id, e.seq, null);
  }
  // The claims without an event are the identifies'.
  const claims = db.prepare(
    'SELECT source_id, insert_id FROM insert_ids WHERE (source_id, insert_id) > (?, ?) AND event_id IS NULL ORDER BY source_id, insert_id LIMIT 10000',
  );
  for (let rows = claims.all('', '') as OldClaim[]; rows.length > 0; rows = claims.all(rows.at(-1)!.source_id, rows.at(-1)!.insert_id) as OldClaim[]) {
    for (const c of rows) claim(c.source_id, c.insert_id, null, Number(addClaim.run(c.source_id, c.insert_id).lastInsertRowid));
  }
  db.exec('DROP TABLE insert_ids');
}
