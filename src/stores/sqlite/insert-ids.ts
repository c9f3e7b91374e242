import type { Statement } from 'better-sqlite3';
import { FingerprintTable } from './fingerprint-table.js';
import { type PairHash, pairHash } from './insert-id-hash.js';
import type { Db } from './open.js';

/** Rows read a statement at a time when the table is filled or caught up. */
const CHUNK = 10_000;

export interface InsertIdsOptions {
  /** For tests that force hash collisions. */
  hash?: PairHash;
}

/** Where an insert_id was added in a write: lengths of its lists, to go back to. */
export interface InsertIdsMark {
  added: number;
  removed: number;
}

/**
 * The insert_ids the embedded store holds, found without an index on disk.
 *
 * The truth is in the rows: an event's insert_id is in its row, an
 * identify's in a row of identify_claims, and nothing else is written for
 * idempotency. Each connection keeps in memory a FingerprintTable
 * (fingerprint-table.ts) from a hash of (source, insert_id) to the rows that
 * may hold it: an event's seq, or minus a claim's. A lookup hashes each
 * insert_id, and reads the rows the table names, all in one statement; the
 * rows decide. A hash that matches another pair, or a row deleted since
 * (retention, erasure, another process), therefore never makes an insert_id
 * stored: it costs a row read, and a deleted event's insert_id is free again.
 * An insert_id never seen needs no read at all.
 *
 * Filled from the rows, in seq order, before a server listens
 * (SqliteStore.prepareToServe) or at the connection's first write (in a
 * read transaction, so other processes keep writing meanwhile); then, at the
 * start of every write, with the write lock held, it takes in the rows other
 * connections committed since (seqs past the newest it has seen: rows only
 * ever get higher seqs, see event-deletion.ts). The bound of this design:
 * filling took 1.0 to 1.9 s for a million stored insert_ids and 6.1 to 6.8 s
 * for five million on a busy 2-core machine, and the table holds 10 to 12
 * bytes per insert_id (docs/design.md, "Idempotency on the embedded store").
 *
 * A write's additions wait in a table of their own, seen by the write's
 * lookups, and join the connection's table only once COMMIT has returned; a
 * savepoint rolled back drops those made since it began, and a write rolled
 * back (a dry run, a failure) drops them all. Rows the write deletes are
 * taken out at COMMIT too; rows other connections delete stay in the table
 * until the process restarts, failing their row check (memory, not
 * correctness).
 *
 * Contract: rows with an insert_id are added only through add(), between
 * beginWrite() and committed() or rolledBack(), in a transaction that holds
 * the write lock (BEGIN IMMEDIATE). Every SqliteIngestTx of a connection
 * shares its object (insertIdsOf).
 */
export class SqliteInsertIds {
  private readonly table = new FingerprintTable(1 << 16);
  private readonly hash: PairHash;
  /** The newest event and claim seqs the table has taken in. */
  private eventsSeen = 0;
  private claimsSeen = 0;
  private filled = false;
  /** The write's additions, found by lookups, and as lists to fold in and to undo. */
  private readonly pending = new FingerprintTable(4096, 1);
  private addedHashes: number[] = [];
  private addedRefs: number[] = [];
  /** Rows the write deleted: to take out at COMMIT. */
  private removedHashes: number[] = [];
  private removedRefs: number[] = [];
  private writing = false;
  /** Newest seqs read just before COMMIT: what the table holds once it returns. */
  private newestAtCommit: Newest | null = null;
  private readonly s;

  constructor(
    private readonly db: Db,
    opts: InsertIdsOptions = {},
  ) {
    this.hash = opts.hash ?? pairHash;
    this.s = {
      newest: db.prepare('SELECT (SELECT coalesce(max(seq), 0) FROM events) AS e, (SELECT coalesce(max(seq), 0) FROM identify_claims) AS c'),
      eventsAfter: db
        .prepare('SELECT seq, source_id, insert_id FROM events WHERE seq > ? AND seq <= ? AND insert_id IS NOT NULL ORDER BY seq LIMIT ?')
        .raw(),
      claimsAfter: db.prepare('SELECT seq, source_id, insert_id FROM identify_claims WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?').raw(),
      // The rows the table named, by seq: events, then claims.
      rows: db
        .prepare(
          `SELECT source_id, insert_id, id AS event_id FROM events WHERE seq IN (SELECT value FROM json_each(?))
           UNION ALL
           SELECT source_id, insert_id, NULL FROM identify_claims WHERE seq IN (SELECT value FROM json_each(?))`,
        )
        .raw(),
      addClaim: db.prepare('INSERT INTO identify_claims (source_id, insert_id) VALUES (?, ?)'),
    };
  }

  /** Insert_ids in the connection's table (committed ones, deleted rows not yet taken out included). */
  get size(): number {
    return this.table.size;
  }

  /** Memory of the connection's table. */
  get bytes(): number {
    return this.table.bytes;
  }

  /**
   * Call just before BEGIN IMMEDIATE: on the connection's first write, fills
   * the table in a read transaction of its own, not holding the write lock.
   */
  beforeWrite(): void {
    if (this.filled) return;
    this.db.transaction(() => this.catchUp())();
    this.filled = true;
  }

  /** Call first in every write transaction, with the write lock held: takes in what other connections committed. */
  beginWrite(): void {
    this.dropWrite();
    this.catchUp();
    this.filled = true;
    this.writing = true;
  }

  /** Call last before COMMIT. */
  beforeCommit(): void {
    this.newestAtCommit = this.s.newest.get() as Newest;
  }

  /** Call once COMMIT has returned: the write's changes join the table. */
  committed(): void {
    const added = this.addedHashes;
    for (let i = 0; i < added.length; i++) this.table.add(added[i]!, this.addedRefs[i]!);
    for (let i = 0; i < this.removedHashes.length; i++) this.table.remove(this.removedHashes[i]!, this.removedRefs[i]!);
    // Every row up to these seqs is in: other connections wrote none during the write.
    if (this.newestAtCommit !== null) {
      this.eventsSeen = Math.max(this.eventsSeen, this.newestAtCommit.e);
      this.claimsSeen = Math.max(this.claimsSeen, this.newestAtCommit.c);
    }
    this.dropWrite();
  }

  /** Call when the write is rolled back: nothing of it stays. */
  rolledBack(): void {
    this.dropWrite();
  }

  /** Where the write stands, for a savepoint. */
  mark(): InsertIdsMark {
    return { added: this.addedHashes.length, removed: this.removedHashes.length };
  }

  /** A savepoint rolled back: what was added or deleted since `m` never happened. */
  rollbackTo(m: InsertIdsMark): void {
    if (this.addedHashes.length > m.added) {
      this.addedHashes.length = m.added;
      this.addedRefs.length = m.added;
      this.pending.clear();
      for (let i = 0; i < m.added; i++) this.pending.add(this.addedHashes[i]!, this.addedRefs[i]!);
    }
    this.removedHashes.length = m.removed;
    this.removedRefs.length = m.removed;
  }

  /** insert_id → event id (null for an identify) of those stored for the source, this write's included. */
  find(sourceId: string, insertIds: string[]): Map<string, string | null> {
    return this.lookUp(sourceId, insertIds, this.hashes(sourceId, insertIds));
  }

  /**
   * Records stored insert_ids: an event's (`eventSeq`, its row), or an
   * identify's (`eventSeq` null), whose claim row is written here. One
   * already stored, or given twice, is refused: the caller looked first, so
   * that is a bug, not a race.
   */
  add(sourceId: string, pairs: { insertId: string; eventSeq: number | null }[]): void {
    const ids = pairs.map((p) => p.insertId);
    const hashes = this.hashes(sourceId, ids);
    const stored = this.lookUp(sourceId, ids, hashes);
    const seen = new Set<string>();
    for (const id of ids) {
      if (stored.has(id) || seen.has(id)) throw new Error(`insert_id ${id} is already stored for source ${sourceId}`);
      seen.add(id);
    }
    pairs.forEach((p, i) => {
      const ref = p.eventSeq ?? -Number(this.s.addClaim.run(sourceId, p.insertId).lastInsertRowid);
      this.pending.add(hashes[i]!, ref);
      this.addedHashes.push(hashes[i]!);
      this.addedRefs.push(ref);
    });
  }

  private hashes(sourceId: string, insertIds: string[]): number[] {
    return insertIds.map((id) => this.hash(sourceId, id));
  }

  /** As find, with the insert_ids' hashes worked out. */
  private lookUp(sourceId: string, insertIds: string[], hashes: number[]): Map<string, string | null> {
    if (!this.writing) throw new Error('insert_ids are looked up only inside a write');
    const refs: number[] = [];
    for (const h of hashes) {
      this.table.refsOf(h, refs);
      this.pending.refsOf(h, refs);
    }
    const found = new Map<string, string | null>();
    if (refs.length === 0) return found;
    const events = refs.filter((r) => r > 0);
    const claims = refs.filter((r) => r < 0).map((r) => -r);
    const rows = this.s.rows.all(JSON.stringify(events), JSON.stringify(claims)) as [string, string | null, string | null][];
    const asked = new Set(insertIds);
    for (const [source, insertId, eventId] of rows) {
      if (source === sourceId && insertId !== null && asked.has(insertId)) found.set(insertId, eventId);
    }
    return found;
  }

  /** Events the write deleted (event-deletion.ts): taken out of the table at COMMIT. */
  deleted(rows: { seq: number; sourceId: string; insertId: string }[]): void {
    if (!this.writing) return;
    for (const r of rows) {
      this.removedHashes.push(this.hash(r.sourceId, r.insertId));
      this.removedRefs.push(r.seq);
    }
  }

  private dropWrite(): void {
    if (this.addedHashes.length > 0) this.pending.clear();
    this.addedHashes = [];
    this.addedRefs = [];
    this.removedHashes = [];
    this.removedRefs = [];
    this.newestAtCommit = null;
    this.writing = false;
  }

  /** Takes in the rows committed past the newest seqs seen, a chunk at a time. */
  private catchUp(): void {
    const n = this.s.newest.get() as Newest;
    this.eventsSeen = this.takeIn(this.s.eventsAfter, this.eventsSeen, n.e, 1);
    this.claimsSeen = this.takeIn(this.s.claimsAfter, this.claimsSeen, n.c, -1);
  }

  private takeIn(stmt: Statement, after: number, upTo: number, sign: 1 | -1): number {
    while (after < upTo) {
      const rows = stmt.all(after, upTo, CHUNK) as [number, string, string][];
      for (const [seq, sourceId, insertId] of rows) this.table.add(this.hash(sourceId, insertId), sign * seq);
      after = rows.length < CHUNK ? upTo : rows[rows.length - 1]![0];
    }
    return Math.max(after, upTo);
  }
}

interface Newest {
  e: number;
  c: number;
}

const byConnection = new WeakMap<Db, SqliteInsertIds>();

/** The insert_ids of a connection: every SqliteIngestTx on it, and its deletions, share one. */
export function insertIdsOf(db: Db): SqliteInsertIds {
  let ids = byConnection.get(db);
  if (ids === undefined) byConnection.set(db, (ids = new SqliteInsertIds(db)));
  return ids;
}
