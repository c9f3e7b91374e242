import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../../../test/helpers/fixture.js';
import { type ItemSpec, ingestJob, seedJobOwners } from '../../../test/helpers/items.js';
import type { IngestJob, ItemOutcome } from '../../domain/ingest/job.js';
import { ingestPass } from '../../domain/ingest/pass.js';
import { SqliteAdmin } from './admin.js';
import { SqliteIngestTx } from './ingest-tx.js';
import { InsertIdIndex } from './insert-id-index.js';
import { InsertIdSlots, type SlotOf, slotOf } from './insert-id-slots.js';
import { SQLITE_MIGRATIONS } from './migrations.js';
import { type Db, openSqlite } from './open.js';

const tmp = tempDir('inlet-slots-');
afterEach(() => tmp.remove());

const LAST_SLOT = 2 ** 53 - 1;

/** Every pair starts at one of three slots, the last of them at the end of the slot space. */
const threeSlots: SlotOf = (_source, insertId) => [5, 6, LAST_SLOT][insertId.length % 3]!;

/** Adds an event row the way the ingest pass does, and returns its seq. */
function addEvent(db: Db, sourceId: string, insertId: string): number {
  const r = db
    .prepare(
      `INSERT INTO events (id, project_id, source_id, event, person_id, timestamp, received_at, insert_id, properties)
       VALUES (?, 'prj_1', ?, 'e', 'per_1', 0, 0, ?, '{}')`,
    )
    .run(`evt_${sourceId}_${insertId}`, sourceId, insertId);
  return Number(r.lastInsertRowid);
}

describe('insert_id slots', () => {
  it('start slots are integers below 2^53 that depend on the source and the insert_id', () => {
    const a = slotOf('src_1', 'order-1');
    expect(Number.isSafeInteger(a) && a >= 0).toBe(true);
    expect(slotOf('src_1', 'order-1')).toBe(a);
    expect(slotOf('src_2', 'order-1')).not.toBe(a);
    expect(slotOf('src_1', 'order-2')).not.toBe(a);
    // The separator keeps ("a", "bc") and ("ab", "c") apart.
    expect(slotOf('a', 'bc')).not.toBe(slotOf('ab', 'c'));
  });

  it('start slots never change: stores on disk rely on them (values computed apart, with Python hashlib)', () => {
    expect(slotOf('src_1', 'order-1')).toBe(8159483041229831);
    expect(slotOf('src_ae29intQ9vAM2YG6', 'inv_2026_000913')).toBe(3947623930811012);
    expect(slotOf('a', 'bc')).toBe(2277546258492791);
  });

  it('answer exactly when every pair collides, wrapping past the last slot', () => {
    const db = openSqlite(tmp.dir);
    const slots = new InsertIdSlots(db, threeSlots);
    const stored = new Map<string, string | null>();
    db.transaction(() => {
      for (let i = 0; i < 60; i++) {
        const source = i % 2 === 0 ? 'src_a' : 'src_b';
        const id = `id-${'x'.repeat(i % 7)}-${i}`;
        if (i % 4 === 0) {
          slots.claimWithoutEvent(source, id);
          stored.set(`${source}/${id}`, null);
        } else {
          slots.claimForEvent(source, id, addEvent(db, source, id));
          stored.set(`${source}/${id}`, `evt_${source}_${id}`);
        }
      }
    })();
    // 60 pairs in one run of slots: 5, 6, …, and around the end of the space through 0.
    expect(db.prepare('SELECT count(*) FROM insert_id_slots').pluck().get()).toBe(60);
    expect(db.prepare('SELECT count(*) FROM insert_id_slots WHERE slot < 5').pluck().get()).toBeGreaterThan(0);

    for (const source of ['src_a', 'src_b']) {
      const asked = [...stored.keys()].map((k) => k.split('/')[1]!).concat(['id-never', 'id--0-x']);
      const found = slots.find(source, asked);
      const expected = new Map([...stored].filter(([k]) => k.startsWith(`${source}/`)).map(([k, v]) => [k.split('/')[1]!, v]));
      expect(found).toEqual(expected);
    }
  });

  it('claiming a stored pair again is refused, not stored twice', () => {
    const db = openSqlite(tmp.dir);
    const slots = new InsertIdSlots(db, threeSlots);
    slots.claimForEvent('src_a', 'one', addEvent(db, 'src_a', 'one'));
    slots.claimWithoutEvent('src_a', 'two');
    expect(() => slots.claimWithoutEvent('src_a', 'one')).toThrow(/already stored/);
    expect(() => slots.claimForEvent('src_a', 'two', addEvent(db, 'src_a', 'two'))).toThrow(/already stored/);
    slots.claimWithoutEvent('src_b', 'one');
    expect(db.prepare('SELECT count(*) FROM insert_id_slots').pluck().get()).toBe(3);
  });

  it('the ingest algorithm keeps exactly-once when every insert_id collides', async () => {
    const db = openSqlite(tmp.dir);
    await seedJobOwners({ admin: new SqliteAdmin(db) });
    // Every pass merges all it wrote, so the second and third passes find pairs in the slots.
    const tx = new SqliteIngestTx(db, new InsertIdIndex(db, { slotOf: threeSlots, mergeAt: 1 }));
    const item = (index: number, insertId: string, type: 'track' | 'identify' = 'track'): ItemSpec => ({ type, distinctId: `u${index}`, insertId });
    const job = (items: ItemSpec[]): IngestJob => ingestJob(items);
    const pass = async (jobs: IngestJob[]) => {
      tx.begin();
      const out = (await ingestPass(tx, jobs, 0)) as ItemOutcome[][];
      tx.commit();
      expect(db.prepare('SELECT count(*) FROM temp.pending_insert_ids').pluck().get()).toBe(0);
      return out;
    };

    const [first, second] = await pass([job([item(0, 'a'), item(1, 'bb'), item(2, 'ccc', 'identify')]), job([item(0, 'a'), item(1, 'dddd')])]);
    expect(first!.map((o) => o.status)).toEqual(['accepted', 'accepted', 'accepted']);
    expect(second!.map((o) => o.status)).toEqual(['duplicate', 'accepted']);
    const [again] = await pass([job([item(0, 'dddd'), item(1, 'ccc', 'identify'), item(2, 'bb'), item(3, 'eeeee'), item(4, 'a')])]);
    expect(again!.map((o) => o.status)).toEqual(['duplicate', 'duplicate', 'duplicate', 'accepted', 'duplicate']);
    expect(again![4]).toEqual({ index: 4, status: 'duplicate', eventId: (first![0] as { eventId: string }).eventId });
    expect(again![1]).toEqual({ index: 1, status: 'duplicate', eventId: null });
    // An event on an identify's start slot, and an identify on events' start slot: the slot's
    // holder is told apart by the kind of row it points at, not only by its number.
    const [mixed] = await pass([job([item(0, 'ffffff'), item(1, 'ggggggg', 'identify')])]);
    expect(mixed!.map((o) => o.status)).toEqual(['accepted', 'accepted']);
    const [mixedAgain] = await pass([job([item(0, 'ggggggg', 'identify'), item(1, 'ffffff')])]);
    expect(mixedAgain!.map((o) => o.status)).toEqual(['duplicate', 'duplicate']);
    expect(db.prepare('SELECT count(*) FROM events').pluck().get()).toBe(5);
    expect(db.prepare('SELECT count(*) FROM insert_id_slots').pluck().get()).toBe(7);
  });

  it('a store made before slots is moved to them: every stored pair still counts as stored', () => {
    mkdirSync(tmp.dir, { recursive: true });
    const file = join(tmp.dir, 'inlet.db');
    const old = new Database(file);
    old.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
    old.exec(SQLITE_MIGRATIONS[0] as string);
    old.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (1, 0)').run();
    const addOld = old.prepare(
      `INSERT INTO events (id, project_id, source_id, event, person_id, timestamp, received_at, insert_id, properties)
       VALUES (?, 'prj_1', ?, 'e', 'per_1', ?, 0, ?, '{}')`,
    );
    const claimOld = old.prepare('INSERT INTO insert_ids (source_id, insert_id, event_id) VALUES (?, ?, ?)');
    // More than one chunk of the move, and events without an insert_id.
    old.exec('BEGIN');
    for (let i = 0; i < 25_000; i++) {
      const source = i % 2 === 0 ? 'src_a' : 'src_b';
      const insertId = i % 10 === 0 ? null : `old-${i}`;
      addOld.run(`evt_${i}`, source, 1_795_000_000_000 + i, insertId);
      if (insertId !== null) claimOld.run(source, insertId, `evt_${i}`);
    }
    for (let i = 0; i < 12_000; i++) claimOld.run('src_a', `identify-${i}`, null);
    old.exec('COMMIT');
    old.close();

    const db = openSqlite(tmp.dir);
    expect(db.prepare('SELECT max(version) FROM schema_migrations').pluck().get()).toBe(SQLITE_MIGRATIONS.length);
    expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name IN ('insert_ids', 'events_source_time')").pluck().get()).toBe(0);
    expect(db.prepare('SELECT count(*) FROM insert_id_slots').pluck().get()).toBe(22_500 + 12_000);
    const slots = new InsertIdSlots(db);
    const found = slots.find('src_a', ['old-2', 'old-3', 'old-10', 'old-24998', 'identify-0', 'identify-11999', 'identify-12000']);
    expect(found).toEqual(new Map([['old-2', 'evt_2'], ['old-24998', 'evt_24998'], ['identify-0', null], ['identify-11999', null]]));
    expect(slots.find('src_b', ['old-3', 'old-2', 'identify-0'])).toEqual(new Map([['old-3', 'evt_3']]));
  });
});
