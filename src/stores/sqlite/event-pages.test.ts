import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { sqliteTestDir } from '../../../test/helpers/sqlite.js';
import { newEventId } from '../../domain/ids.js';
import { SqlEventPages } from '../sql/event-pages.js';
import { EventDeletion } from './event-deletion.js';
import { SqliteEventPages, receivedAtOf } from './event-pages.js';
import type { Db } from './open.js';
import { sqliteEngine } from './sql-engine.js';

const { open } = sqliteTestDir('inlet-event-pages-');

const T0 = Date.UTC(2026, 0, 1);

/** Writes an event row as the ingest pass would, received at `receivedAt`; returns its id. */
function add(db: Db, receivedAt: number, opts: { id?: string; source?: string; seq?: bigint } = {}): string {
  const id = opts.id ?? newEventId(receivedAt);
  db.prepare(
    `INSERT INTO events (seq, id, project_id, source_id, event, distinct_id, person_id, timestamp, received_at, properties)
     VALUES (?, ?, 'prj_1', ?, 'e', 'u', 'per_1', ?, ?, '{}')`,
  ).run(opts.seq ?? null, id, opts.source ?? 'src_1', receivedAt - 5_000, receivedAt);
  return id;
}

const seqOf = (db: Db, id: string): number => db.prepare('SELECT seq FROM events WHERE id = ?').pluck().get(id) as number;

describe('finding where an event stands, for paging before it', () => {
  it('reads the id time a UUIDv7 event id carries, and nothing from other ids', () => {
    expect(receivedAtOf(newEventId(T0 + 123))).toBe(T0 + 123);
    expect(receivedAtOf(randomUUID())).toBeNull();
    expect(receivedAtOf('not-an-id')).toBeNull();
  });

  it('finds events by the rows received near their id time, also past deleted rows, without reading the table', async () => {
    const db = open();
    const pages = new SqliteEventPages(db, sqliteEngine(db));
    // A second apart, some received in the same millisecond.
    const ids = db.transaction(() => Array.from({ length: 3000 }, (_, i) => add(db, T0 + Math.floor(i / 3) * 1000)))();
    db.prepare('DELETE FROM events WHERE seq BETWEEN ? AND ?').run(seqOf(db, ids[1000]!), seqOf(db, ids[1999]!));
    for (const i of [0, 1, 999, 2000, 2001, 2999]) {
      expect(await pages.eventPosition('src_1', ids[i]!)).toEqual({ seq: seqOf(db, ids[i]!), timestamp: T0 + Math.floor(i / 3) * 1000 - 5_000 });
    }
    expect(pages.stats.wholeTableReads).toBe(0);
  });

  it('still finds an event written out of order, or with an id of another form, by reading the table', async () => {
    const db = open();
    const pages = new SqliteEventPages(db, sqliteEngine(db));
    for (let i = 0; i < 500; i++) add(db, T0 + i * 1000);
    // Received long before the rows around it (a request that took minutes to arrive whole).
    const late = add(db, T0 - 3_600_000);
    const other = add(db, T0 + 10_000, { id: randomUUID() });
    for (let i = 500; i < 600; i++) add(db, T0 + i * 1000);
    expect(await pages.eventPosition('src_1', late)).toEqual({ seq: seqOf(db, late), timestamp: T0 - 3_605_000 });
    expect(await pages.eventPosition('src_1', other)).toEqual({ seq: seqOf(db, other), timestamp: T0 + 5_000 });
    expect(pages.stats.wholeTableReads).toBe(2);
  });

  it('steps over the placeholder a deletion of the newest event leaves, which has no time', async () => {
    const db = open();
    const pages = new SqliteEventPages(db, sqliteEngine(db));
    // Ten minutes apart: the widest window (a minute each way) holds one of them only.
    const ids = db.transaction(() => Array.from({ length: 41 }, (_, i) => add(db, T0 + i * 600_000)))();
    db.transaction(() => new EventDeletion(db).delete([seqOf(db, ids[40]!)]))();
    // The placeholder (received_at 0) now sits where the search probes first.
    expect(db.prepare("SELECT count(*) FROM events WHERE source_id = ''").pluck().get()).toBe(1);
    for (const i of [0, 19, 20, 21, 39]) expect(await pages.eventPosition('src_1', ids[i]!)).toMatchObject({ seq: seqOf(db, ids[i]!) });
    expect(pages.stats.wholeTableReads).toBe(0);
  });

  it('reads the table rather than search seqs past 2^53, which numbers cannot hold exactly', async () => {
    const db = open();
    const pages = new SqliteEventPages(db, sqliteEngine(db));
    const big = 2n ** 53n;
    const ids = [0n, 1n, 4n].map((d, i) => add(db, T0 + i, { seq: big + d }));
    expect(await pages.eventPosition('src_1', ids[1]!)).toEqual({ seq: Number(big + 1n), timestamp: T0 + 1 - 5_000 });
    expect(pages.stats.wholeTableReads).toBe(1);
  });

  it('an id that is no UUID is answered null without reading the table', async () => {
    const db = open();
    const engine = sqliteEngine(db);
    const reads = new SqliteEventPages(db, engine);
    const pages = new SqlEventPages(engine, reads);
    add(db, T0);
    expect(await pages.eventCursor('src_1', 'not-an-id')).toBeNull();
    expect(reads.stats.wholeTableReads).toBe(0);
    expect(await pages.eventCursor('src_1', randomUUID())).toBeNull();
    expect(reads.stats.wholeTableReads).toBe(1);
  });

  it('answers null for an id of another source, an unknown id, or an empty table', async () => {
    const db = open();
    const pages = new SqliteEventPages(db, sqliteEngine(db));
    expect(await pages.eventPosition('src_1', newEventId(T0))).toBeNull();
    const id = add(db, T0);
    expect(await pages.eventPosition('src_2', id)).toBeNull();
    expect(await pages.eventPosition('src_1', newEventId(T0))).toBeNull();
  });
});
