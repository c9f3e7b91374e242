import { describe, expect, it } from 'vitest';
import { sqliteTestDir } from '../../../test/helpers/sqlite.js';
import { InsertIdIndex } from './insert-id-index.js';
import { InsertIdSlots, type SlotOf } from './insert-id-slots.js';
import type { Db } from './open.js';

const { open } = sqliteTestDir('inlet-insert-id-index-');

let plain = 0;
const addEvent = (db: Db, sourceId: string, insertId: string | null): { seq: number; id: string } => {
  const id = insertId === null ? `evt_plain_${plain++}` : `evt_${sourceId}_${insertId}`;
  const r = db
    .prepare(
      `INSERT INTO events (id, project_id, source_id, event, person_id, timestamp, received_at, insert_id, properties)
       VALUES (?, 'prj_1', ?, 'e', 'per_1', 0, 0, ?, '{}')`,
    )
    .run(id, sourceId, insertId);
  return { seq: Number(r.lastInsertRowid), id };
};

/**
 * One write transaction as the store runs it: pairs are events, except those
 * named `claim-…`; `plainEvents` more events carry no insert_id.
 */
function write(db: Db, index: InsertIdIndex, insertIds: string[], sourceId = 'src_1', plainEvents = 0): void {
  db.exec('BEGIN IMMEDIATE');
  index.beginWrite();
  for (let i = 0; i < plainEvents; i++) addEvent(db, sourceId, null);
  const pairs = insertIds.map((insertId) => {
    if (insertId.startsWith('claim-')) return { insertId, eventSeq: null };
    const e = addEvent(db, sourceId, insertId);
    return { insertId, eventSeq: e.seq };
  });
  index.add(sourceId, pairs);
  index.endWrite();
  db.exec('COMMIT');
}

const count = (db: Db, table: string): number => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
const ids = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

describe('insert_id index', () => {
  it('pairs not yet merged are found at once, and again after the process restarts', () => {
    let db = open();
    const first = new InsertIdIndex(db, { mergeAt: 1_000_000 });
    write(db, first, ['a', 'claim-b']);
    expect(first.find('src_1', ['a', 'claim-b'])).toEqual(new Map([['a', 'evt_src_1_a'], ['claim-b', null]]));
    expect(count(db, 'insert_id_slots')).toBe(0);
    db.close();

    db = open();
    const index = new InsertIdIndex(db, { mergeAt: 1_000_000 });
    expect(index.find('src_1', ['a', 'claim-b', 'c'])).toEqual(new Map([['a', 'evt_src_1_a'], ['claim-b', null]]));
    expect(index.find('src_2', ['a'])).toEqual(new Map());
  });

  it('a merge moves every pending pair into the slots, a slice per commit, and the mark on disk records it', () => {
    const db = open();
    const index = new InsertIdIndex(db, { mergeAt: 2000 });
    const all = [...ids('e', 2500), ...ids('claim', 500)];
    // Commits of 100 pairs: the merge that starts at 2000 pending goes at about 256 pairs a commit.
    const partial: number[] = [];
    for (let i = 0; i < all.length; i += 100) {
      write(db, index, all.slice(i, i + 100));
      const slots = count(db, 'insert_id_slots');
      if (slots > 0 && count(db, 'temp.pending_insert_ids') > 0) partial.push(slots);
    }
    expect(partial.length).toBeGreaterThan(3);
    // The merge took the first 2000; the 1000 written since wait for the next one.
    expect(count(db, 'insert_id_slots')).toBe(2000);
    expect(count(db, 'temp.pending_insert_ids')).toBe(1000);
    const marks = db.prepare('SELECT events_through, claims_through FROM insert_id_index_state').get();
    expect(marks).toEqual({ events_through: 2000, claims_through: 0 });
    const found = index.find('src_1', [...all, 'never']);
    expect(found.size).toBe(3000);
    expect(found.get('e-7')).toBe('evt_src_1_e-7');
    expect(found.get('claim-7')).toBeNull();
  });

  it('a merge cut short by a crash is finished after restart, with each pair in one slot', () => {
    let db = open();
    let index = new InsertIdIndex(db, { mergeAt: 1000 });
    const all = ids('e', 1500);
    for (let i = 0; i < 1100; i += 100) write(db, index, all.slice(i, i + 100));
    const slotsBefore = count(db, 'insert_id_slots');
    expect(slotsBefore).toBeGreaterThan(0);
    expect(slotsBefore).toBeLessThan(1000);
    // No close: the process is gone, the merge half done (the handle is closed after the test).

    db = open();
    index = new InsertIdIndex(db, { mergeAt: 1000 });
    // Pending pairs are read back on first use, not when the store opens.
    expect(count(db, 'temp.pending_insert_ids')).toBe(0);
    expect(index.find('src_1', all).size).toBe(1100);
    expect(count(db, 'temp.pending_insert_ids')).toBe(1100);
    // The next merge takes all 1200 pending after the next commit, some placed before the crash.
    for (let i = 1100; i < 1500; i += 100) write(db, index, all.slice(i, i + 100));
    for (let i = 0; i < 10; i++) write(db, index, []);
    expect(count(db, 'insert_id_slots')).toBe(1200);
    expect(count(db, 'temp.pending_insert_ids')).toBe(300);
    expect(index.find('src_1', all).size).toBe(1500);
  });

  it('a merge redone over collision chains, across its slices and past 2^53, leaves each pair in one slot, found', () => {
    // Pairs start at three slots only, one of them the last: chains hundreds long that wrap to 0.
    const crowded: SlotOf = (_source, insertId) => [5, 6, 2 ** 53 - 1][Number(insertId.split('-')[1]) % 3]!;
    let db = open();
    let index = new InsertIdIndex(db, { slotOf: crowded, mergeAt: 1000 });
    const all = [...ids('e', 1200), ...ids('claim', 300)];
    const order = all.map((_, i) => all[(i * 7) % all.length]!);
    // The merge starts at 1000 and goes about 256 seqs a commit: the process stops after its first slices.
    for (let i = 0; i < 1100; i += 100) write(db, index, order.slice(i, i + 100));
    const before = count(db, 'insert_id_slots');
    expect(before).toBeGreaterThan(0);
    expect(before).toBeLessThan(1000);

    db = open();
    index = new InsertIdIndex(db, { slotOf: crowded, mergeAt: 1000 });
    for (let i = 1100; i < 1500; i += 100) write(db, index, order.slice(i, i + 100));
    for (let i = 0; i < 10; i++) write(db, index, []);
    const placed = db.prepare('SELECT count(*) AS slots, count(DISTINCT event_seq) + count(DISTINCT claim_seq) AS rows FROM insert_id_slots').get() as {
      slots: number;
      rows: number;
    };
    expect(placed.slots).toBe(placed.rows);
    expect(placed.slots).toBeGreaterThanOrEqual(1100);
    const slotsOnly = new InsertIdSlots(db, crowded);
    const merged = order.filter((id) => slotsOnly.find('src_1', [id]).size === 1);
    expect(merged.length).toBe(placed.slots);
    expect(index.find('src_1', all).size).toBe(1500);
  });

  it('a pair another connection wrote is found from its next write on', () => {
    const a = open();
    const b = open();
    const indexA = new InsertIdIndex(a);
    const indexB = new InsertIdIndex(b);
    write(a, indexA, ['from-a']);
    b.exec('BEGIN IMMEDIATE');
    indexB.beginWrite();
    expect(indexB.find('src_1', ['from-a'])).toEqual(new Map([['from-a', 'evt_src_1_from-a']]));
    indexB.endWrite();
    b.exec('COMMIT');
  });

  it('three connections merging the same pairs at once place each pair once, and none falls behind', () => {
    const dbs = [open(), open(), open()];
    const indexes = dbs.map((db) => new InsertIdIndex(db, { mergeAt: 1000 }));
    const merging = new Set<number>();
    for (let round = 0; round < 40; round++) {
      dbs.forEach((db, k) => {
        write(db, indexes[k]!, ids(`r${round}-c${k}`, 100));
        if (db.prepare('SELECT merge_next FROM temp.pending_insert_id_marks').pluck().get() !== null) merging.add(k);
      });
    }
    expect([...merging].sort()).toEqual([0, 1, 2]);
    const mark = dbs[0]!.prepare('SELECT events_through FROM insert_id_index_state').pluck().get() as number;
    // 12,000 pairs written; the mark trails by at most a couple of merges.
    expect(mark).toBeGreaterThan(12_000 - 3000);
    for (const db of dbs) expect(count(db, 'temp.pending_insert_ids')).toBeLessThan(3000);
    // Every pair up to the mark has a slot, and no pair has two (merges under way may have placed more).
    const placed = dbs[0]!.prepare('SELECT count(*) AS slots, count(DISTINCT event_seq) AS pairs, sum(event_seq <= ?) AS upToMark FROM insert_id_slots');
    const p = placed.get(mark) as { slots: number; pairs: number; upToMark: number };
    expect(p.slots).toBe(p.pairs);
    expect(p.upToMark).toBe(mark);
    for (const [k, index] of indexes.entries()) expect(index.find('src_1', ids(`r${k}-c2`, 100)).size).toBe(100);
  });

  it('events without an insert_id count toward the pace, so pending pairs stay bounded', () => {
    const db = open();
    const index = new InsertIdIndex(db, { mergeAt: 2000 });
    // 1000 events a commit, 20 of them with an insert_id.
    for (let c = 0; c < 100; c++) write(db, index, ids(`c${c}`, 20), 'src_1', 980);
    const mark = db.prepare('SELECT events_through FROM insert_id_index_state').pluck().get() as number;
    expect(mark).toBeGreaterThan(100_000 - 5000);
    expect(count(db, 'temp.pending_insert_ids')).toBeLessThan(120);
  });

  it('a pair written in a transaction or savepoint that rolls back is not found', () => {
    const db = open();
    const index = new InsertIdIndex(db);
    db.exec('BEGIN IMMEDIATE');
    index.beginWrite();
    const e = addEvent(db, 'src_1', 'gone');
    index.add('src_1', [{ insertId: 'gone', eventSeq: e.seq }]);
    db.exec('ROLLBACK');
    expect(index.find('src_1', ['gone'])).toEqual(new Map());

    db.exec('BEGIN IMMEDIATE');
    index.beginWrite();
    index.add('src_1', [{ insertId: 'kept', eventSeq: null }]);
    db.exec('SAVEPOINT job');
    index.add('src_1', [{ insertId: 'dry', eventSeq: null }]);
    db.exec('ROLLBACK TO job');
    db.exec('RELEASE job');
    index.endWrite();
    db.exec('COMMIT');
    expect(index.find('src_1', ['kept', 'dry'])).toEqual(new Map([['kept', null]]));
  });

  it('a pair the lookup before found stored, pending or in the slots, cannot be added again', () => {
    const db = open();
    write(db, new InsertIdIndex(db, { mergeAt: 2 }), ['claim-merged', 'merged']);
    const index = new InsertIdIndex(db);
    write(db, index, ['claim-pending', 'pending']);
    expect(count(db, 'insert_id_slots')).toBe(2);
    db.exec('BEGIN IMMEDIATE');
    index.beginWrite();
    const asked = ['claim-merged', 'merged', 'claim-pending', 'pending', 'new'];
    expect([...index.find('src_1', asked).keys()].sort()).toEqual(asked.slice(0, 4).sort());
    for (const insertId of asked.slice(0, 4)) {
      expect(() => index.add('src_1', [{ insertId, eventSeq: null }])).toThrow(/already stored/);
    }
    index.add('src_1', [{ insertId: 'new', eventSeq: null }]);
    expect(() => index.add('src_1', [{ insertId: 'new', eventSeq: null }])).toThrow(/already stored/);
    // Without a lookup first (a new write), add looks itself.
    index.endWrite();
    index.beginWrite();
    expect(() => index.add('src_1', [{ insertId: 'merged', eventSeq: null }])).toThrow(/already stored/);
    db.exec('ROLLBACK');
  });

  it('a lookup vouches only for the write it was made in, on any index object of the connection', () => {
    const db = open();
    const other = open();
    const index = new InsertIdIndex(db);
    // Looked up outside any write; another process then stores the pair.
    expect(index.find('src_1', ['x']).size).toBe(0);
    write(other, new InsertIdIndex(other), ['x']);
    db.exec('BEGIN IMMEDIATE');
    index.beginWrite();
    expect(() => index.add('src_1', [{ insertId: 'x', eventSeq: addEvent(db, 'src_1', 'x').seq }])).toThrow(/already stored/);
    db.exec('ROLLBACK');

    // Two index objects on one connection share its pending pairs, and so its lookups.
    const a = new InsertIdIndex(db);
    const b = new InsertIdIndex(db);
    db.exec('BEGIN IMMEDIATE');
    a.beginWrite();
    b.beginWrite();
    expect(a.find('src_1', ['y']).size).toBe(0);
    b.add('src_1', [{ insertId: 'y', eventSeq: null }]);
    expect(() => a.add('src_1', [{ insertId: 'y', eventSeq: null }])).toThrow(/already stored/);
    db.exec('ROLLBACK');
  });

  it('pairs are added only inside a write', () => {
    const db = open();
    const index = new InsertIdIndex(db);
    expect(() => index.add('src_1', [{ insertId: 'z', eventSeq: null }])).toThrow(/between beginWrite/);
  });

  it('a data directory from a newer Inlet is refused, not written to', () => {
    const db = open();
    db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (99, 0)').run();
    db.close();
    expect(() => open()).toThrow(/newer Inlet \(schema version 99/);
  });
});
