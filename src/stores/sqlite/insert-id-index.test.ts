import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../../../test/helpers/fixture.js';
import { InsertIdIndex } from './insert-id-index.js';
import { type Db, openSqlite } from './open.js';

const tmp = tempDir('inlet-insert-id-index-');
const opened: Db[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) if (db.open) db.close();
  tmp.remove();
});

function open(): Db {
  const db = openSqlite(tmp.dir);
  opened.push(db);
  return db;
}

const addEvent = (db: Db, sourceId: string, insertId: string): { seq: number; id: string } => {
  const id = `evt_${sourceId}_${insertId}`;
  const r = db
    .prepare(
      `INSERT INTO events (id, project_id, source_id, event, person_id, timestamp, received_at, insert_id, properties)
       VALUES (?, 'prj_1', ?, 'e', 'per_1', 0, 0, ?, '{}')`,
    )
    .run(id, sourceId, insertId);
  return { seq: Number(r.lastInsertRowid), id };
};

/** One write transaction as the store runs it: pairs are events, except those named `claim-…`. */
function write(db: Db, index: InsertIdIndex, insertIds: string[], sourceId = 'src_1'): void {
  db.exec('BEGIN IMMEDIATE');
  index.beginWrite();
  for (const insertId of insertIds) {
    if (insertId.startsWith('claim-')) {
      index.addClaim(sourceId, insertId);
      continue;
    }
    const e = addEvent(db, sourceId, insertId);
    index.addEvent(sourceId, insertId, e.seq, e.id);
  }
  index.endWrite(insertIds.length);
  db.exec('COMMIT');
}

const count = (db: Db, table: string): number => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
const ids = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

describe('insert_id index', () => {
  it('pairs not yet merged are found at once, and again after the process restarts', () => {
    let db = open();
    write(db, new InsertIdIndex(db, { mergeAt: 1_000_000 }), ['a', 'claim-b']);
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
    // No close: the process is gone, the merge half done.
    opened.pop();

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

  it('a pair another connection wrote is found from the next write on; its merge there is not done twice', () => {
    const a = open();
    const b = open();
    const indexA = new InsertIdIndex(a, { mergeAt: 100 });
    const indexB = new InsertIdIndex(b, { mergeAt: 100 });
    write(a, indexA, ['from-a']);
    b.exec('BEGIN IMMEDIATE');
    indexB.beginWrite();
    expect(indexB.find('src_1', ['from-a'])).toEqual(new Map([['from-a', 'evt_src_1_from-a']]));
    indexB.endWrite(0);
    b.exec('COMMIT');

    // Both connections now merge the same pairs; each must end up in one slot.
    write(a, indexA, ids('a', 150));
    for (let i = 0; i < 20; i++) {
      write(b, indexB, []);
      write(a, indexA, []);
    }
    expect(count(a, 'insert_id_slots')).toBe(151);
    expect(count(a, 'temp.pending_insert_ids')).toBe(0);
    expect(count(b, 'temp.pending_insert_ids')).toBe(0);
  });

  it('a pair written in a transaction or savepoint that rolls back is not found', () => {
    const db = open();
    const index = new InsertIdIndex(db);
    db.exec('BEGIN IMMEDIATE');
    index.beginWrite();
    const e = addEvent(db, 'src_1', 'gone');
    index.addEvent('src_1', 'gone', e.seq, e.id);
    db.exec('ROLLBACK');
    expect(index.find('src_1', ['gone'])).toEqual(new Map());

    db.exec('BEGIN IMMEDIATE');
    index.beginWrite();
    index.addClaim('src_1', 'kept');
    db.exec('SAVEPOINT job');
    index.addClaim('src_1', 'dry');
    db.exec('ROLLBACK TO job');
    db.exec('RELEASE job');
    index.endWrite(1);
    db.exec('COMMIT');
    expect(index.find('src_1', ['kept', 'dry'])).toEqual(new Map([['kept', null]]));
  });

  it('a pair already pending cannot be added again', () => {
    const db = open();
    const index = new InsertIdIndex(db);
    index.addClaim('src_1', 'once');
    expect(() => index.addClaim('src_1', 'once')).toThrow();
  });
});
