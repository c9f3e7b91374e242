import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { Random } from '../../../bench/random.js';
import { sqliteTestDir } from '../../../test/helpers/sqlite.js';
import { EventMinuteIndex } from './event-minute-index.js';
import { SqliteEventPages } from './event-pages.js';
import { SQLITE_MIGRATIONS } from './migrations.js';
import type { Db } from './open.js';
import { sqliteEngine } from './sql-engine.js';

const { dir, open } = sqliteTestDir('inlet-event-minutes-');

const T0 = 1_795_000_000_000;

interface Stored {
  seq: number;
  sourceId: string;
  timestamp: number;
}

const insertSql = `INSERT INTO events (id, project_id, source_id, event, person_id, timestamp, received_at, properties)
  VALUES ('evt_' || ?, 'prj_1', ?, 'e', 'per_1', ?, 0, '{}')`;

let written = 0;

/** One write transaction as the store runs it: events, then the index's end of write, then COMMIT. */
function write(db: Db, index: EventMinuteIndex, events: { sourceId: string; timestamp: number }[]): Stored[] {
  const insert = db.prepare(insertSql);
  db.exec('BEGIN IMMEDIATE');
  const stored = events.map((e) => ({ ...e, seq: Number(insert.run(`w${written++}`, e.sourceId, e.timestamp).lastInsertRowid) }));
  index.endWrite();
  db.exec('COMMIT');
  return stored;
}

/** The seqs of a source's newest events, as a page of the events list reads them through the index (event-pages.ts). */
async function newest(db: Db, sourceId: string, limit: number): Promise<number[]> {
  const rows = await new SqliteEventPages(db, sqliteEngine(db)).eventPage({ sourceId, order: 'desc', after: null, limit });
  return rows.map((r) => r.seq);
}

/** What `newest` must answer, worked out from every stored event. */
function expected(all: Stored[], sourceId: string, limit: number): number[] {
  return all
    .filter((e) => e.sourceId === sourceId)
    .sort((a, b) => b.timestamp - a.timestamp || b.seq - a.seq)
    .slice(0, limit)
    .map((e) => e.seq);
}

const mark = (db: Db): number => db.prepare('SELECT through FROM event_minutes_state').pluck().get() as number;
const indexedSeqs = (db: Db): number[] =>
  db.prepare('SELECT j.value FROM event_minute_runs m, json_each(m.seqs) j ORDER BY j.value').pluck().all() as number[];

describe('the minute index of events', () => {
  it('finds the newest events of a source, whether indexed, in the tail or both, over many minutes and ties', async () => {
    const db = open();
    const index = new EventMinuteIndex(db, 50);
    const r = new Random(7);
    const all: Stored[] = [];
    let merges = 0;
    for (let commit = 0; commit < 60; commit++) {
      // Timestamps over three hours, many on the same millisecond, and two
      // sources that share minutes.
      const events = Array.from({ length: 1 + r.int(12) }, () => ({
        sourceId: r.chance(0.7) ? 'src_a' : 'src_b',
        timestamp: T0 + r.int(180) * 60_000 + (r.chance(0.5) ? 0 : r.int(60_000)),
      }));
      const before = mark(db);
      all.push(...write(db, index, events));
      if (mark(db) !== before) merges++;
      for (const sourceId of ['src_a', 'src_b']) {
        for (const limit of [1, 7, 40, 1000]) expect(await newest(db, sourceId, limit)).toEqual(expected(all, sourceId, limit));
      }
    }
    expect(merges).toBeGreaterThan(5);
    // Everything up to the mark is indexed, once; nothing past it is.
    expect(indexedSeqs(db)).toEqual(all.map((e) => e.seq).filter((s) => s <= mark(db)));
    expect(await newest(db, 'src_c', 10)).toEqual([]);
  });

  it('indexes nothing until the tail is long enough, then all of it in the commit that sees it', () => {
    const db = open();
    const index = new EventMinuteIndex(db, 10);
    const at = (n: number) => Array.from({ length: n }, (_, i) => ({ sourceId: 'src_a', timestamp: T0 + i * 60_000 }));
    write(db, index, at(9));
    expect(mark(db)).toBe(0);
    expect(indexedSeqs(db)).toEqual([]);
    const last = write(db, index, at(1));
    expect(mark(db)).toBe(last[0]!.seq);
    expect(indexedSeqs(db)).toHaveLength(10);
  });

  it('a write that rolls back takes its indexing with it', async () => {
    const db = open();
    const index = new EventMinuteIndex(db, 5);
    write(db, index, [{ sourceId: 'src_a', timestamp: T0 }]);
    db.exec('BEGIN IMMEDIATE');
    const insert = db.prepare(insertSql);
    for (let i = 0; i < 6; i++) insert.run(`rolled-${i}`, 'src_a', T0 + i);
    index.endWrite();
    expect(indexedSeqs(db)).toHaveLength(7);
    db.exec('ROLLBACK');
    expect(mark(db)).toBe(0);
    expect(indexedSeqs(db)).toEqual([]);
    expect(await newest(db, 'src_a', 10)).toHaveLength(1);
  });

  it("one connection's indexing covers another's events, and a third reads each event once", async () => {
    const a = open();
    const b = open();
    const reader = open();
    const ia = new EventMinuteIndex(a, 20);
    const ib = new EventMinuteIndex(b, 20);
    const all: Stored[] = [];
    const some = (n: number, offset: number) => Array.from({ length: n }, (_, i) => ({ sourceId: 'src_a', timestamp: T0 + ((i * 7919 + offset) % 300) * 1000 }));
    all.push(...write(a, ia, some(15, 1)));
    all.push(...write(b, ib, some(10, 2)));
    expect(mark(a)).toBe(Math.max(...all.map((e) => e.seq)));
    all.push(...write(a, ia, some(5, 3)));
    expect(await newest(reader, 'src_a', 100)).toEqual(expected(all, 'src_a', 100));
    expect(indexedSeqs(a)).toHaveLength(25);
  });

  it('a merge by another connection in the middle of a read neither hides nor repeats an event', async () => {
    const writer = open();
    const wi = new EventMinuteIndex(writer, 10);
    // Between the reader's first and second statement, the writer adds events
    // and indexes the tail the reader has already read: the hook makes that
    // write just before the reader's first look for an earlier minute.
    let wrote = false;
    const reader = beforeStatement(open(), 'minute < ?', () => {
      if (wrote) return;
      wrote = true;
      write(writer, wi, Array.from({ length: 10 }, (_, i) => ({ sourceId: 'src_a', timestamp: T0 + i * 7000 })));
    });
    const all = write(writer, wi, Array.from({ length: 15 }, (_, i) => ({ sourceId: 'src_a', timestamp: T0 + i * 60_000 })));
    all.push(...write(writer, wi, Array.from({ length: 5 }, (_, i) => ({ sourceId: 'src_a', timestamp: T0 + i * 1000 }))));
    const before = expected(all, 'src_a', 100);
    expect(await newest(reader, 'src_a', 100)).toEqual(before);
    expect(wrote).toBe(true);
  });

  it('a store from before the minute index gets every event it holds indexed, and its old index dropped', async () => {
    mkdirSync(dir, { recursive: true });
    const old = new Database(join(dir, 'inlet.db'));
    old.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at INTEGER NOT NULL)');
    for (const [i, step] of SQLITE_MIGRATIONS.slice(0, 3).entries()) {
      if (typeof step === 'string') old.exec(step);
      else (step as (db: typeof old) => void)(old);
      old.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)').run(i + 1);
    }
    const insert = old.prepare(insertSql);
    const all: Stored[] = [];
    old.exec('BEGIN');
    // The last 4,000 events, all src_a, share one minute: more than one run's worth.
    const busyMinute = Math.ceil((T0 + 7_200_000) / 60_000);
    for (let i = 0; i < 7000; i++) {
      const e = i < 3000 ? { sourceId: i % 3 === 0 ? 'src_b' : 'src_a', timestamp: T0 + ((i * 104_729) % 7_200_000) } : { sourceId: 'src_a', timestamp: busyMinute * 60_000 + (i % 60_000) };
      all.push({ ...e, seq: Number(insert.run(i, e.sourceId, e.timestamp).lastInsertRowid) });
    }
    old.exec('COMMIT');
    old.close();

    const db = open();
    expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'events_source_minute'").pluck().get()).toBe(0);
    expect(mark(db)).toBe(7000);
    expect(indexedSeqs(db)).toEqual(all.map((e) => e.seq));
    // Version 5 packed the rows of version 4 in runs of at most 2,048 seqs.
    const runs = db.prepare('SELECT minute, last_seq, seqs FROM event_minute_runs').all() as { minute: number; last_seq: number; seqs: string }[];
    const busiest = runs.filter((r) => r.minute === busyMinute).map((r) => (JSON.parse(r.seqs) as number[]).length);
    expect(busiest.reduce((a, b) => a + b)).toBe(4000);
    expect(busiest.length).toBeGreaterThan(1);
    expect(Math.max(...busiest)).toBeLessThanOrEqual(2048);
    for (const r of runs) expect(Math.max(...(JSON.parse(r.seqs) as number[]))).toBe(r.last_seq);
    for (const limit of [1, 500, 5000, 8000]) {
      expect(await newest(db, 'src_a', limit)).toEqual(expected(all, 'src_a', limit));
      expect(await newest(db, 'src_b', limit)).toEqual(expected(all, 'src_b', limit));
    }
  });
});

/**
 * `db` as the index is handed it, except that each run of the statement whose
 * SQL holds `marker` first calls `before`: a place to put another
 * connection's write between two statements of one read.
 */
function beforeStatement(db: Db, marker: string, before: () => void): Db {
  const bound = (target: object, p: string | symbol): unknown => {
    const v = Reflect.get(target, p, target) as unknown;
    return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
  };
  return new Proxy(db, {
    get: (t, p) => {
      if (p !== 'prepare') return bound(t, p);
      return (sql: string) => {
        const stmt = t.prepare(sql);
        if (!sql.includes(marker)) return stmt;
        const hooked: typeof stmt = new Proxy(stmt, {
          get: (st, q) => {
            if (q === 'get' || q === 'all') return (...a: unknown[]) => (before(), st[q](...a));
            // Modes return the statement itself: the hooked one, so the hook stays.
            if (q === 'pluck' || q === 'raw' || q === 'expand' || q === 'safeIntegers') return (...a: unknown[]) => ((st[q] as (...x: unknown[]) => unknown)(...a), hooked);
            return bound(st, q);
          },
        });
        return hooked;
      };
    },
  });
}
