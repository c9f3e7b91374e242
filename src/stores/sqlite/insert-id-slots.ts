import * as crypto from 'node:crypto';
import type { Db } from './open.js';

/** SHA-256 of a string (UTF-8); the one-shot crypto.hash where Node has it (20.12 on), which costs half as much. */
const sha256: (text: string) => Buffer =
  typeof crypto.hash === 'function'
    ? (text) => crypto.hash('sha256', text, 'buffer')
    : (text) => crypto.createHash('sha256').update(text).digest();

/** Slots are integers below 2^53, so they travel as plain JS numbers. */
export const SLOT_SPACE = 2 ** 53;

/** Where a (source, insert_id) pair starts looking for its slot. */
export type SlotOf = (sourceId: string, insertId: string) => number;

/**
 * The first 53 bits of SHA-256 over the source and the insert_id. This is an
 * on-disk format: stores already hold pairs placed by it, so changing it
 * needs a migration that places every pair again (a test pins its values).
 */
export const slotOf: SlotOf = (sourceId, insertId) => {
  const d = sha256(`${sourceId}\u0000${insertId}`);
  return d.readUIntBE(0, 6) * 32 + (d[6]! >> 3);
};

/**
 * The embedded store's record of stored insert_ids: an open-addressing hash
 * table kept in SQLite.
 *
 * Why not a (source_id, insert_id) primary key: insert_ids are random, so each
 * new one lands on a different page of a wide B-tree, and every commit wrote
 * one 4 KiB page per item to the WAL. A slot row is an integer key and an
 * integer reference, about 16 bytes, so the tree is several times smaller and
 * commits dirty fewer, smaller-fanout pages (bench/README.md has the figures).
 *
 * Exactness does not rest on the hash. A slot points at the row that holds the
 * pair's text (the event, or an identify claim), and every probe compares
 * that text. A slot taken by another pair sends the search on to the next
 * slot (linear probing); an empty slot ends it. Slots are never emptied, so a
 * pair that was stored is always found before an empty slot.
 *
 * New pairs do not come here one by one: insert-id-index.ts keeps them
 * pending and merges them in slot order.
 */
export class InsertIdSlots {
  private readonly s;

  constructor(
    db: Db,
    private readonly startSlot: SlotOf = slotOf,
  ) {
    this.s = {
      probe: db.prepare(
        `SELECT j.key AS i, coalesce(e.source_id, c.source_id) AS source_id,
                coalesce(e.insert_id, c.insert_id) AS insert_id, e.id AS event_id
         FROM json_each(?) j
         JOIN insert_id_slots s ON s.slot = j.value
         LEFT JOIN events e ON e.seq = s.event_seq
         LEFT JOIN identify_claims c ON c.seq = s.claim_seq`,
      ),
      probeOne: db.prepare(
        `SELECT coalesce(e.source_id, c.source_id) AS source_id, coalesce(e.insert_id, c.insert_id) AS insert_id
         FROM insert_id_slots s
         LEFT JOIN events e ON e.seq = s.event_seq
         LEFT JOIN identify_claims c ON c.seq = s.claim_seq
         WHERE s.slot = ?`,
      ),
      take: db.prepare('INSERT INTO insert_id_slots (slot, event_seq, claim_seq) VALUES (?, ?, ?) ON CONFLICT (slot) DO NOTHING'),
      addClaim: db.prepare('INSERT INTO identify_claims (source_id, insert_id) VALUES (?, ?)'),
    };
  }

  /** insert_id → event id (null for an identify) of those stored for the source. */
  find(sourceId: string, insertIds: string[]): Map<string, string | null> {
    return this.findFrom(sourceId, insertIds.map((id) => ({ id, slot: this.startSlot(sourceId, id) })));
  }

  /** As find, for insert_ids whose start slots the caller has already worked out. */
  findFrom(sourceId: string, start: { id: string; slot: number }[]): Map<string, string | null> {
    const found = new Map<string, string | null>();
    let pending = start;
    // One statement per probe round; a second round is needed only after a
    // hash collision, which is rare.
    while (pending.length > 0) {
      const rows = this.s.probe.all(JSON.stringify(pending.map((p) => p.slot))) as SlotRow[];
      const taken = new Map(rows.map((r) => [r.i, r]));
      const next: typeof pending = [];
      pending.forEach((p, i) => {
        const r = taken.get(i);
        if (r === undefined) return;
        if (r.source_id === sourceId && r.insert_id === p.id) found.set(p.id, r.event_id);
        else next.push({ id: p.id, slot: following(p.slot) });
      });
      pending = next;
    }
    return found;
  }

  /** Records a stored event's insert_id; `eventSeq` is the event's row. */
  claimForEvent(sourceId: string, insertId: string, eventSeq: number): void {
    this.claim(sourceId, insertId, eventSeq, null);
  }

  /** Records an insert_id that stored no event (an identify). */
  claimWithoutEvent(sourceId: string, insertId: string): void {
    this.claim(sourceId, insertId, null, this.addClaimRow(sourceId, insertId));
  }

  /** Writes the row that holds an identify's pair (a slot points at it); returns its seq. */
  addClaimRow(sourceId: string, insertId: string): number {
    return Number(this.s.addClaim.run(sourceId, insertId).lastInsertRowid);
  }

  /**
   * Gives a pending pair (insert-id-index.ts) its slot. A pair that already
   * has one is left as it is: a merge cut short by a crash, or done by
   * another connection, is done again from the rows.
   */
  place(sourceId: string, insertId: string, eventSeq: number | null, claimSeq: number | null): void {
    this.claim(sourceId, insertId, eventSeq, claimSeq, true);
  }

  private claim(sourceId: string, insertId: string, eventSeq: number | null, claimSeq: number | null, again = false): void {
    for (let slot = this.startSlot(sourceId, insertId); ; slot = following(slot)) {
      if (this.s.take.run(slot, eventSeq, claimSeq).changes === 1) return;
      const holder = this.s.probeOne.get(slot) as { source_id: string | null; insert_id: string | null };
      if (holder.source_id === sourceId && holder.insert_id === insertId) {
        if (again) return;
        // The caller looked first under the write lock, so this means a bug, not a race.
        throw new Error(`insert_id ${insertId} is already stored for source ${sourceId}`);
      }
    }
  }
}

interface SlotRow {
  i: number;
  source_id: string | null;
  insert_id: string | null;
  event_id: string | null;
}

function following(slot: number): number {
  return slot + 1 === SLOT_SPACE ? 0 : slot + 1;
}
