import { describe, expect, it } from 'vitest';
import { sqliteTestDir } from '../../../test/helpers/sqlite.js';
import { type ItemSpec, ingestJob, seedJobOwners } from '../../../test/helpers/items.js';
import type { IngestJob, ItemOutcome } from '../../domain/ingest/job.js';
import { ingestPass } from '../../domain/ingest/pass.js';
import type { InsertIdClaim } from '../port.js';
import { SqlAdmin } from '../sql/admin.js';
import { sqliteEngine } from './sql-engine.js';
import { EventDeletion } from './event-deletion.js';
import { passQuery, passWrites } from '../../../test/helpers/pass-bundles.js';
import { SqliteIngestTx } from './ingest-tx.js';
import type { PairHash } from './insert-id-hash.js';
import { SqliteInsertIds, insertIdsOf } from './insert-ids.js';
import { SqliteStore } from './sqlite-store.js';
import type { Db } from './open.js';

const { dir, open } = sqliteTestDir('inlet-insert-ids-');

/** Every pair has the same hash: each lookup of a stored table reads rows that hold other pairs. */
const oneHash: PairHash = () => 7;

const track = (insertId: string, distinctId = 'u'): ItemSpec => ({ distinctId, insertId });
const identify = (insertId: string, distinctId = 'u'): ItemSpec => ({ type: 'identify', distinctId, insertId });

/** A store's write path on one connection, with its own insert_ids (a hash given or the real one). */
async function writer(db: Db, hash?: PairHash, seed = true) {
  if (seed) await seedJobOwners({ admin: new SqlAdmin(sqliteEngine(db)) });
  // The connection's own object (which its deletions report to), unless a hash is forced.
  const ids = hash === undefined ? insertIdsOf(db) : new SqliteInsertIds(db, { hash });
  const tx = new SqliteIngestTx(db, ids);
  /** One write transaction of passes, committed unless `keep` is false; returns each job's statuses. */
  const write = async (jobs: ItemSpec[][], keep = true): Promise<string[][]> => {
    tx.begin();
    try {
      const out = (await ingestPass(tx, jobs.map((j) => ingestJob(j)), 0)) as ItemOutcome[][];
      if (keep) tx.commit();
      else tx.rollback();
      return out.map((o) => o.map((x) => x.status));
    } catch (e) {
      if (db.inTransaction) tx.rollback();
      throw e;
    }
  };
  /** The insert_ids of src_1 found stored, in a write of its own rolled back after. */
  const stored = (insertIds: string[]): string[] => {
    tx.begin();
    const found = tx.read(passQuery('prj_1', 'src_1', { insertIds })).insertIds;
    tx.rollback();
    return [...found.keys()].sort();
  };
  return { tx, ids, write, stored };
}

/** insert_ids claimed in a bundle of their own. */
const claim = (tx: SqliteIngestTx, sourceId: string, rows: InsertIdClaim[]): void => tx.write({ projectId: 'prj_1', sourceId, now: 0 }, passWrites({ insertIds: rows }));

const count = (db: Db, sql: string): number => db.prepare(sql).pluck().get() as number;

describe('insert_ids in memory, checked against their rows', () => {
  it('keep exactly-once when every pair has the same hash: events, identifies and repeats in one write', async () => {
    const db = open();
    const { write, stored, ids } = await writer(db, oneHash);
    expect(await write([[track('a'), track('b'), identify('c')], [track('a'), track('d')]])).toEqual([
      ['accepted', 'accepted', 'accepted'],
      ['duplicate', 'accepted'],
    ]);
    expect(await write([[track('d'), identify('c'), track('b'), track('e'), track('a')]])).toEqual([
      ['duplicate', 'duplicate', 'duplicate', 'accepted', 'duplicate'],
    ]);
    expect(stored(['a', 'b', 'c', 'd', 'e', 'f'])).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(count(db, 'SELECT count(*) FROM events')).toBe(4);
    expect(ids.size).toBe(5);
  });

  it('a duplicate names the event stored first; an identify names none', async () => {
    const db = open();
    const { write, tx } = await writer(db, oneHash);
    await write([[track('x'), identify('y')]]);
    tx.begin();
    const found = tx.read(passQuery('prj_1', 'src_1', { insertIds: ['x', 'y', 'z'] })).insertIds;
    tx.rollback();
    const first = db.prepare("SELECT id FROM events WHERE insert_id = 'x'").pluck().get();
    expect(found).toEqual(new Map([['x', first], ['y', null]]));
  });

  it('the same insert_id of another source is another pair, even with the same hash', async () => {
    const db = open();
    const { tx } = await writer(db, oneHash);
    tx.begin();
    claim(tx, 'src_2', [{ insertId: 'a', eventId: null }]);
    expect(tx.read(passQuery('prj_1', 'src_1', { insertIds: ['a'] })).insertIds.size).toBe(0);
    claim(tx, 'src_1', [{ insertId: 'a', eventId: null }]);
    expect(tx.read(passQuery('prj_1', 'src_1', { insertIds: ['a'] })).insertIds).toEqual(new Map([['a', null]]));
    tx.commit();
  });

  it('refuses to add a pair already stored, or the same pair twice', async () => {
    const db = open();
    const { write, tx } = await writer(db, oneHash);
    await write([[track('a'), identify('b')]]);
    tx.begin();
    expect(() => claim(tx, 'src_1', [{ insertId: 'a', eventId: null }])).toThrow(/already stored/);
    expect(() => claim(tx, 'src_1', [{ insertId: 'b', eventId: null }])).toThrow(/already stored/);
    expect(() => claim(tx, 'src_1', [{ insertId: 'n', eventId: null }, { insertId: 'n', eventId: null }])).toThrow(/already stored/);
    claim(tx, 'src_1', [{ insertId: 'c', eventId: null }]);
    expect(() => claim(tx, 'src_1', [{ insertId: 'c', eventId: null }])).toThrow(/already stored/);
    tx.rollback();
  });

  it('a write rolled back (a dry run, a failure) leaves nothing behind', async () => {
    const db = open();
    const { write, stored, ids } = await writer(db);
    expect(await write([[track('dry'), identify('dry-id')]], false)).toEqual([['accepted', 'accepted']]);
    expect(stored(['dry', 'dry-id'])).toEqual([]);
    // The rows' seqs are handed out again; the table must not name the rolled-back pairs with them.
    expect(await write([[track('next'), identify('next-id')]])).toEqual([['accepted', 'accepted']]);
    expect(stored(['dry', 'dry-id', 'next', 'next-id'])).toEqual(['next', 'next-id']);
    expect(ids.size).toBe(2);
  });

  it('a savepoint rolled back drops only what was added since it began, and later additions count', async () => {
    const db = open();
    const { tx, stored, ids } = await writer(db);
    tx.begin();
    await tx.savepoint(async () => ingestPass(tx, [ingestJob([track('kept')])], 0));
    const boom = new Error('boom');
    await expect(
      tx.savepoint(async () => {
        await ingestPass(tx, [ingestJob([track('undone'), identify('undone-id')])], 0);
        expect(tx.read(passQuery('prj_1', 'src_1', { insertIds: ['undone', 'undone-id'] })).insertIds.size).toBe(2);
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(tx.read(passQuery('prj_1', 'src_1', { insertIds: ['kept', 'undone', 'undone-id'] })).insertIds).toEqual(new Map([['kept', expect.any(String)]]));
    // Nested: the inner one fails, the outer one keeps what it added before.
    await tx.savepoint(async () => {
      await ingestPass(tx, [ingestJob([track('outer')])], 0);
      await expect(
        tx.savepoint(async () => {
          await ingestPass(tx, [ingestJob([track('inner')])], 0);
          throw boom;
        }),
      ).rejects.toBe(boom);
    });
    const [again] = (await ingestPass(tx, [ingestJob([track('undone'), track('kept'), track('outer'), track('inner')])], 0)) as ItemOutcome[][];
    expect(again!.map((o) => o.status)).toEqual(['accepted', 'duplicate', 'duplicate', 'accepted']);
    tx.commit();
    expect(stored(['kept', 'undone', 'undone-id', 'outer', 'inner'])).toEqual(['inner', 'kept', 'outer', 'undone']);
    expect(ids.size).toBe(4);
  });

  it('a COMMIT that fails leaves nothing of the write in memory', async () => {
    const db = open();
    const { tx, stored } = await writer(db);
    // A deferred foreign key is checked at COMMIT, which fails and leaves the transaction open.
    db.exec('CREATE TABLE parent (id INTEGER PRIMARY KEY); CREATE TABLE child (p INTEGER REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED)');
    tx.begin();
    await ingestPass(tx, [ingestJob([track('lost'), identify('lost-id')])], 0);
    db.exec('INSERT INTO child (p) VALUES (1)');
    expect(() => tx.commit()).toThrow(/FOREIGN KEY/);
    expect(db.inTransaction).toBe(true);
    tx.rollback();
    expect(stored(['lost', 'lost-id'])).toEqual([]);
    expect(count(db, 'SELECT count(*) FROM events')).toBe(0);
  });

  it('a pair another connection committed is found from the next write on, and is not taken in twice', async () => {
    const a = open();
    const b = open();
    const wa = await writer(a);
    const wb = await writer(b, undefined, false);
    expect(await wa.write([[track('from-a')]])).toEqual([['accepted']]);
    expect(await wb.write([[track('from-a'), track('from-b'), identify('from-b-id')]])).toEqual([['duplicate', 'accepted', 'accepted']]);
    expect(await wa.write([[track('from-b'), identify('from-b-id'), track('from-a')]])).toEqual([['duplicate', 'duplicate', 'duplicate']]);
    expect([wa.ids.size, wb.ids.size]).toEqual([3, 3]);
    // Turn by turn, many times: every pair stored once.
    for (let i = 0; i < 20; i++) {
      const w = i % 2 === 0 ? wa : wb;
      expect(await w.write([[track(`t${i}`), track(`t${i + 1}`)]])).toEqual([i === 0 ? ['accepted', 'accepted'] : ['duplicate', 'accepted']]);
    }
    expect(count(a, 'SELECT count(*) FROM events')).toBe(2 + 21);
    // b wrote last: a takes its rows in at its next write.
    expect([wa.ids.size, wb.ids.size]).toEqual([23, 24]);
    expect(await wa.write([[track('t20')]])).toEqual([['duplicate']]);
    expect([wa.ids.size, wb.ids.size]).toEqual([24, 24]);
  });

  it("a deleted event's insert_id is free again; this connection's deletions leave its memory at COMMIT", async () => {
    const a = open();
    const b = open();
    const wa = await writer(a);
    const wb = await writer(b, undefined, false);
    await wa.write([[track('one'), track('two'), track('three'), identify('four')]]);
    await wb.write([[track('one')]]);
    const seqOf = (id: string): number => a.prepare('SELECT seq FROM events WHERE insert_id = ?').pluck().get(id) as number;

    // Deleted on connection a, in a write of its own (retention, erasure): gone from a's memory.
    const deletion = new EventDeletion(a);
    wa.tx.begin();
    deletion.delete([seqOf('one')]);
    wa.tx.commit();
    // Rows deleted by another connection (b, here) stay in a's memory and fail their check.
    const other = new EventDeletion(b);
    wb.tx.begin();
    other.delete([seqOf('two')]);
    wb.tx.commit();
    expect(wa.ids.size).toBe(3);
    expect(wa.stored(['one', 'two', 'three', 'four'])).toEqual(['four', 'three']);
    expect(wb.stored(['one', 'two', 'three', 'four'])).toEqual(['four', 'three']);

    // Sent again, each is stored anew, once.
    expect(await wa.write([[track('one'), track('two'), track('three')]])).toEqual([['accepted', 'accepted', 'duplicate']]);
    expect(await wb.write([[track('one'), track('two')]])).toEqual([['duplicate', 'duplicate']]);
    // A deletion rolled back takes nothing out.
    wa.tx.begin();
    deletion.delete([seqOf('three')]);
    wa.tx.rollback();
    expect(wa.stored(['three'])).toEqual(['three']);
  });

  it('is filled from the rows when a connection first writes, in chunks, with every kind of row', async () => {
    let db = open();
    await seedJobOwners({ admin: new SqlAdmin(sqliteEngine(db)) });
    // 25,000 events (one in ten without an insert_id), 12,000 identify claims, and a second source.
    const addEvent = db.prepare(
      `INSERT INTO events (id, project_id, source_id, event, person_id, timestamp, received_at, insert_id, properties)
       VALUES (?, 'prj_1', ?, 'e', 'per_1', 0, 0, ?, '{}')`,
    );
    const addClaim = db.prepare('INSERT INTO identify_claims (source_id, insert_id) VALUES (?, ?)');
    db.transaction(() => {
      for (let i = 0; i < 25_000; i++) addEvent.run(`evt_${i}`, i % 2 === 0 ? 'src_1' : 'src_2', i % 10 === 0 ? null : `old-${i}`);
      for (let i = 0; i < 12_000; i++) addClaim.run('src_1', `identify-${i}`);
    })();
    db.close();

    db = open();
    const { ids, tx } = await writer(db, undefined, false);
    expect(ids.size).toBe(0);
    tx.begin();
    expect(ids.size).toBe(22_500 + 12_000);
    const found = tx.read(passQuery('prj_1', 'src_1', { insertIds: ['old-2', 'old-3', 'old-10', 'old-24998', 'identify-0', 'identify-11999', 'identify-12000'] })).insertIds;
    expect(found).toEqual(new Map([['old-2', 'evt_2'], ['old-24998', 'evt_24998'], ['identify-0', null], ['identify-11999', null]]));
    expect(tx.read(passQuery('prj_1', 'src_2', { insertIds: ['old-3', 'old-2', 'identify-0'] })).insertIds).toEqual(new Map([['old-3', 'evt_3']]));
    tx.rollback();
  });

  it('a server fills it before it listens (prepareToServe), not in its first request', async () => {
    const db = open();
    const { write } = await writer(db);
    await write([[track('a'), identify('b'), track('c')]]);
    db.close();
    // The store on a connection the test opened: the index is the one insertIdsOf keeps for it.
    const conn = open();
    const store = new SqliteStore(conn);
    try {
      const ids = insertIdsOf(conn);
      expect(ids.size).toBe(0);
      await store.prepareToServe();
      expect(ids.size).toBe(3);
    } finally {
      await store.close();
    }
  });

  it('is looked up only inside a write', async () => {
    const db = open();
    const { ids } = await writer(db);
    expect(() => ids.find('src_1', ['a'])).toThrow(/inside a write/);
  });
});
