import { InsertIdSlots, SLOT_SPACE, type SlotOf, slotOf } from './insert-id-slots.js';
import type { Statement } from 'better-sqlite3';
import type { Db } from './open.js';

// A pending pair's ref, as the slot table's two columns, and whether a
// merge covering events and claims up to the two bound seqs (in that order) covers it.
const eventSeq = (ref: string): string => `CASE WHEN ${ref} > 0 THEN ${ref} END`;
const claimSeq = (ref: string): string => `CASE WHEN ${ref} < 0 THEN -${ref} END`;
const covered = (ref: string): string => `((${ref} > 0 AND ${ref} <= ?) OR (${ref} < 0 AND -${ref} <= ?))`;
/** The event or identify claim that holds a pending pair `p`: `e` or `c`. */
const HOLDERS = `LEFT JOIN events e ON p.ref > 0 AND e.seq = p.ref
         LEFT JOIN identify_claims c ON p.ref < 0 AND c.seq = -p.ref`;

/**
 * The last lookup of each connection's current write: which insert_ids it
 * asked about, their start slots, and which were stored then or have been
 * added since. Per connection, not per index object, since the pending
 * table is the connection's.
 */
const lastLookups = new WeakMap<Db, { sourceId: string; slotOfId: Map<string, number>; found: Set<string> }>();

/** Pending pairs that start a merge into the slots. */
const MERGE_AT = 50_000;

/** Seqs' worth of slots a commit merges at least, so that a quiet store still finishes its merge. */
const MERGE_FLOOR = 256;

export interface InsertIdIndexOptions {
  /** For tests that force hash collisions. */
  slotOf?: SlotOf;
  /** For tests: pending pairs that start a merge. */
  mergeAt?: number;
}

/**
 * Every insert_id the embedded store holds, as a two-level index: the slots
 * table on disk (insert-id-slots.ts), and the pairs not yet merged into it,
 * kept per connection in an in-memory TEMP table.
 *
 * Why two levels: insert_ids are random, so a commit of n pairs wrote n
 * scattered slot pages (4 KiB each, twice: WAL, then checkpoint). That was two
 * thirds of the cost of a stored event. Pending pairs are instead merged in
 * slot order, a slice of the slot space per commit; a slice of thousands of
 * pairs shares its pages (bench/README.md has the figures).
 *
 * Nothing is lost with the memory: the event rows and identify claims that
 * hold the pairs are written and made durable by the commit, and they are the
 * truth. The TEMP table is rebuilt from them: on first use, from the rows
 * past the merged mark kept on disk, and at the start of every write, from the
 * rows other connections (another process on the same file) committed since.
 * TEMP tables roll back with the transaction and its savepoints, so a job that
 * fails, a dry run or a failed COMMIT leaves no pending pair behind. (A JS Map
 * was tried: cheaper per insert alone, no cheaper in the server, 40 MiB more
 * RSS, and it needed the caller to report every rollback.)
 *
 * Contract: every event or claim row with an insert_id is written through
 * add(), between beginWrite and endWrite, in a transaction that
 * holds the write lock (BEGIN IMMEDIATE).
 */
export class InsertIdIndex {
  private readonly slots: InsertIdSlots;
  private readonly startSlot: SlotOf;
  private readonly mergeAt: number;
  private readonly s;
  /**
   * Whether pending pairs were read from disk on this connection. Not done
   * in the constructor: an admin command that opens the store to read
   * should not pay for it.
   */
  private loaded = false;
  /** events_seen + claims_seen when the current write began, before its catch-up. */
  private seqAtBegin: number | null = null;

  constructor(
    private readonly db: Db,
    opts: InsertIdIndexOptions = {},
  ) {
    this.startSlot = opts.slotOf ?? slotOf;
    this.mergeAt = opts.mergeAt ?? MERGE_AT;
    this.slots = new InsertIdSlots(db, this.startSlot);
    // The tables belong to the connection; every index object on it shares them.
    db.exec(`
      -- One B-tree in slot order: a pair is found by its start slot, and a merge reads a range.
      -- ref is the row that holds the pair: an event's seq, or minus an identify claim's seq.
      -- Only integers: the text is in that row, and rows of two integers cost a
      -- third of what rows with the text did to add.
      CREATE TEMP TABLE IF NOT EXISTS pending_insert_ids (
        slot INTEGER NOT NULL, ref INTEGER NOT NULL,
        PRIMARY KEY (slot, ref)
      ) WITHOUT ROWID;
      -- seen: the newest rows already in pending_insert_ids or in the slots.
      -- pruned: the merged mark on disk when pairs it covers were last dropped from here.
      -- merge_*: the merge under way, if any: the rows it covers, and where its next slice starts.
      CREATE TEMP TABLE IF NOT EXISTS pending_insert_id_marks (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        events_seen INTEGER NOT NULL, claims_seen INTEGER NOT NULL,
        pruned_events INTEGER NOT NULL, pruned_claims INTEGER NOT NULL,
        merge_events INTEGER, merge_claims INTEGER, merge_size INTEGER, merge_next INTEGER
      );
      INSERT OR IGNORE INTO pending_insert_id_marks (id, events_seen, claims_seen, pruned_events, pruned_claims)
        SELECT 1, events_through, claims_through, events_through, claims_through FROM insert_id_index_state;
    `);
    this.s = {
      newest: db.prepare(
        `SELECT (SELECT coalesce(max(seq), 0) FROM events) AS e, (SELECT coalesce(max(seq), 0) FROM identify_claims) AS c,
                events_through AS merged_e, claims_through AS merged_c
         FROM insert_id_index_state`,
      ),
      marks: db.prepare('SELECT * FROM pending_insert_id_marks'),
      seen: db.prepare('UPDATE pending_insert_id_marks SET events_seen = ?, claims_seen = ?'),
      prune: db.prepare(`DELETE FROM pending_insert_ids WHERE ${covered('ref')}`),
      pruned: db.prepare('UPDATE pending_insert_id_marks SET pruned_events = ?, pruned_claims = ?'),
      // In chunks: better-sqlite3 cannot write while a read is open, and a backlog must not be read whole.
      eventsAfter: db.prepare(
        'SELECT seq, source_id, insert_id FROM events WHERE seq > ? AND seq <= ? AND insert_id IS NOT NULL ORDER BY seq LIMIT 10000',
      ),
      claimsAfter: db.prepare('SELECT seq, source_id, insert_id FROM identify_claims WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT 10000'),
      addLoaded: db.prepare('INSERT OR IGNORE INTO pending_insert_ids (slot, ref) VALUES (?, ?)'),
      add: db.prepare('INSERT INTO pending_insert_ids (slot, ref) VALUES (?, ?)'),
      find: db.prepare(
        `SELECT coalesce(e.insert_id, c.insert_id) AS insert_id, e.id AS event_id
         FROM json_each(?) j
         JOIN pending_insert_ids p ON p.slot = j.value
         ${HOLDERS}
         WHERE coalesce(e.source_id, c.source_id) = ?`,
      ),
      startMerge: db.prepare('UPDATE pending_insert_id_marks SET merge_events = ?, merge_claims = ?, merge_size = ?, merge_next = 0'),
      // A slice goes in with one statement; the pairs whose start slot was
      // taken (by another pair, or by themselves in an earlier, cut-short
      // merge) are then read back and placed one by one.
      placeSlice: db.prepare(
        `INSERT INTO insert_id_slots (slot, event_seq, claim_seq)
         SELECT slot, ${eventSeq('ref')}, ${claimSeq('ref')} FROM pending_insert_ids
         WHERE slot >= ? AND slot < ? AND ${covered('ref')}
         ORDER BY slot
         ON CONFLICT (slot) DO NOTHING`,
      ),
      notPlaced: db.prepare(
        `SELECT coalesce(e.source_id, c.source_id) AS source_id, coalesce(e.insert_id, c.insert_id) AS insert_id, p.ref
         FROM pending_insert_ids p JOIN insert_id_slots s ON s.slot = p.slot
         ${HOLDERS}
         WHERE p.slot >= ? AND p.slot < ? AND ${covered('p.ref')}
           AND (s.event_seq IS NOT ${eventSeq('p.ref')} OR s.claim_seq IS NOT ${claimSeq('p.ref')})`,
      ),
      dropSlice: db.prepare(`DELETE FROM pending_insert_ids WHERE slot >= ? AND slot < ? AND ${covered('ref')}`),
      nextSlice: db.prepare('UPDATE pending_insert_id_marks SET merge_next = ?'),
      endMerge: db.prepare('UPDATE pending_insert_id_marks SET merge_events = NULL, merge_claims = NULL, merge_size = NULL, merge_next = NULL'),
      setMerged: db.prepare(
        'UPDATE insert_id_index_state SET events_through = max(events_through, ?), claims_through = max(claims_through, ?)',
      ),
    };
  }

  /** Call first in every write transaction: takes in what other connections committed. */
  beginWrite(): void {
    lastLookups.delete(this.db);
    this.seqAtBegin = this.catchUp();
    this.loaded = true;
  }

  /** Call when the write is rolled back instead: its TEMP rows went with it. */
  abortWrite(): void {
    this.seqAtBegin = null;
    lastLookups.delete(this.db);
  }

  /**
   * Call last before COMMIT: marks this transaction's rows as seen, and
   * merges the next slice of pending pairs into the slots.
   *
   * Pace: a merge's size and each slice are counted in seqs (rows of events
   * and claims, with or without an insert_id, from every connection), and a
   * commit merges twice the seqs that arrived since the last one. A merge
   * therefore ends before the rows that came in meanwhile reach its own size,
   * and pending pairs stay bounded whatever the mix of writers.
   */
  endWrite(): void {
    const n = this.s.newest.get() as Newest;
    let m = this.s.marks.get() as Marks;
    const grown = n.e + n.c - (this.seqAtBegin ?? m.events_seen + m.claims_seen);
    this.seqAtBegin = null;
    lastLookups.delete(this.db);
    this.s.seen.run(n.e, n.c);
    // Another connection finished a merge that covers this one: nothing left to do.
    if (m.merge_next !== null && n.merged_e >= m.merge_events! && n.merged_c >= m.merge_claims!) {
      this.s.endMerge.run();
      m = { ...m, merge_events: null, merge_claims: null, merge_size: null, merge_next: null };
    }
    if (m.merge_next === null) {
      // Seqs of events without an insert_id count too: an upper bound, and free.
      const size = n.e - n.merged_e + (n.c - n.merged_c);
      if (size < this.mergeAt) return;
      this.s.startMerge.run(n.e, n.c, size);
      m = { ...m, merge_events: n.e, merge_claims: n.c, merge_size: size, merge_next: 0 };
    }
    this.mergeSlice(m, Math.max(MERGE_FLOOR, 2 * grown));
  }

  /** insert_id → event id (null for an identify) of the pairs stored for the source. */
  find(sourceId: string, insertIds: string[]): Map<string, string | null> {
    if (!this.db.inTransaction || !this.loaded) {
      // Outside a write (tests, tools), catch up first, in a read transaction
      // so the rows and the newest seqs come from one snapshot.
      this.db.transaction(() => this.catchUp())();
      this.loaded = true;
    }
    // The pass that looks pairs up then adds them: their slots are hashed once.
    const slotOfId = new Map(insertIds.map((id) => [id, this.startSlot(sourceId, id)]));
    const found = new Map<string, string | null>();
    const rows = this.s.find.all(JSON.stringify([...slotOfId.values()]), sourceId) as { insert_id: string; event_id: string | null }[];
    // A slot can hold other pairs too; only the insert_ids asked for count.
    for (const r of rows) if (slotOfId.has(r.insert_id)) found.set(r.insert_id, r.event_id);
    const rest: { id: string; slot: number }[] = [];
    for (const [id, slot] of slotOfId) if (!found.has(id)) rest.push({ id, slot });
    if (rest.length > 0) for (const [id, eventId] of this.slots.findFrom(sourceId, rest)) found.set(id, eventId);
    // A copy: callers add to the map they get back.
    lastLookups.set(this.db, { sourceId, slotOfId, found: new Set(found.keys()) });
    return found;
  }

  /**
   * Records stored pairs: an event's (its row), or an identify's (`eventSeq`
   * null), whose claim row is written here. Added in slot order, so the
   * in-memory B-tree is walked once. (One row per statement: a single
   * statement over a JSON array cost more, 7.5 against 5.7 µs a pair.)
   *
   * A pair already stored is refused. The pending table holds no text, so
   * its key cannot tell; the last lookup (which the ingest pass makes for
   * every insert_id it then adds) can. When it did not cover them all, the
   * pairs are looked up here.
   */
  add(sourceId: string, pairs: { insertId: string; eventSeq: number | null }[]): void {
    if (this.seqAtBegin === null) throw new Error('InsertIdIndex.add() runs only between beginWrite() and endWrite()');
    let l = lastLookups.get(this.db);
    if (l === undefined || l.sourceId !== sourceId || pairs.some((p) => !l!.slotOfId.has(p.insertId))) {
      this.find(sourceId, pairs.map((p) => p.insertId));
      l = lastLookups.get(this.db)!;
    }
    const rows = pairs.map((p) => {
      if (l.found.has(p.insertId)) throw new Error(`insert_id ${p.insertId} is already stored for source ${sourceId}`);
      l.found.add(p.insertId);
      const ref = p.eventSeq ?? -this.slots.addClaimRow(sourceId, p.insertId);
      return { slot: this.slotFor(sourceId, p.insertId), ref };
    });
    rows.sort((a, b) => a.slot - b.slot);
    for (const r of rows) this.s.add.run(r.slot, r.ref);
  }

  private slotFor(sourceId: string, insertId: string): number {
    const l = lastLookups.get(this.db);
    return (l?.sourceId === sourceId ? l.slotOfId.get(insertId) : undefined) ?? this.startSlot(sourceId, insertId);
  }

  /**
   * Takes in the rows committed since this connection last looked, and
   * returns how many seqs it had seen before (the merge's pace counts from there).
   */
  private catchUp(): number {
    const n = this.s.newest.get() as Newest;
    const m = this.s.marks.get() as Marks;
    // Another connection finished a merge: what it covers is in the slots now.
    if (n.merged_e > m.pruned_events || n.merged_c > m.pruned_claims) {
      this.s.prune.run(n.merged_e, n.merged_c);
      this.s.pruned.run(n.merged_e, n.merged_c);
    }
    const seenBefore = m.events_seen + m.claims_seen;
    if (n.e === m.events_seen && n.c === m.claims_seen) return seenBefore;
    // Rows up to the merged mark are in the slots already.
    this.loadAfter(this.s.eventsAfter, Math.max(m.events_seen, n.merged_e), n.e, 1);
    this.loadAfter(this.s.claimsAfter, Math.max(m.claims_seen, n.merged_c), n.c, -1);
    this.s.seen.run(n.e, n.c);
    return seenBefore;
  }

  /** Adds the pairs of the rows with seq in (after, upTo], read in chunks; `sign` makes their refs. */
  private loadAfter(stmt: Statement, after: number, upTo: number, sign: 1 | -1): void {
    while (after < upTo) {
      const rows = stmt.all(after, upTo) as LoadedRow[];
      for (const r of rows) this.s.addLoaded.run(this.startSlot(r.source_id, r.insert_id), sign * r.seq);
      after = rows.length === 0 ? upTo : rows.at(-1)!.seq;
    }
  }

  /**
   * Merges the pending pairs of the merge's next slice of the slot space: the
   * share `seqs / merge_size` of it. When the last slice is done, the merged
   * mark on disk moves up in the same transaction.
   */
  private mergeSlice(m: Marks, seqs: number): void {
    const from = m.merge_next!;
    const width = Math.max(1, Math.floor((SLOT_SPACE * seqs) / m.merge_size!));
    const to = Math.min(SLOT_SPACE, from + width);
    this.s.placeSlice.run(from, to, m.merge_events, m.merge_claims);
    const rest = this.s.notPlaced.all(from, to, m.merge_events, m.merge_claims) as PendingRow[];
    for (const r of rest) this.slots.place(r.source_id, r.insert_id, r.ref > 0 ? r.ref : null, r.ref < 0 ? -r.ref : null);
    this.s.dropSlice.run(from, to, m.merge_events, m.merge_claims);
    if (to < SLOT_SPACE) {
      this.s.nextSlice.run(to);
      return;
    }
    this.s.setMerged.run(m.merge_events, m.merge_claims);
    this.s.pruned.run(m.merge_events, m.merge_claims);
    this.s.endMerge.run();
  }
}

interface Newest {
  e: number;
  c: number;
  merged_e: number;
  merged_c: number;
}

interface Marks {
  events_seen: number;
  claims_seen: number;
  pruned_events: number;
  pruned_claims: number;
  merge_events: number | null;
  merge_claims: number | null;
  merge_size: number | null;
  merge_next: number | null;
}

/** An event or an identify claim read back from disk. */
interface LoadedRow {
  seq: number;
  source_id: string;
  insert_id: string;
}

interface PendingRow {
  source_id: string;
  insert_id: string;
  ref: number;
}
