import { InsertIdSlots, SLOT_SPACE, type SlotOf, slotOf } from './insert-id-slots.js';
import type { Db } from './open.js';

/** Seqs past the merged mark that start a merge into the slots. */
const MERGE_AT = 50_000;

/** Seqs' worth of slots a commit merges at least, so that a quiet store still finishes its merge. */
const MERGE_FLOOR = 256;

/** A merge goes a whole number of these parts of the slot space at a time. */
const BUCKETS = 4096;
const BUCKET_WIDTH = SLOT_SPACE / BUCKETS;

export interface InsertIdIndexOptions {
  /** For tests that force hash collisions. */
  slotOf?: SlotOf;
  /** For tests: seqs past the merged mark that start a merge. */
  mergeAt?: number;
}

/** A stored pair not yet in the slots. */
interface Pair {
  key: string;
  sourceId: string;
  slot: number;
  insertId: string;
  eventSeq: number | null;
  claimSeq: number | null;
  eventId: string | null;
}

/** Rows up to these seqs (events, identify claims). */
interface Seqs {
  e: number;
  c: number;
}

/** A merge under way: the rows it covers, their number in seqs, and its next bucket. */
interface Merge extends Seqs {
  size: number;
  next: number;
}

/** What the open transaction changes in memory once, and only if, it commits. */
interface Effects {
  seen: Seqs;
  merge: Merge | null;
  /** Buckets whose covered pairs this transaction put in the slots. */
  placed: { from: number; to: number; upTo: Seqs } | null;
  /** Set when this transaction finished a merge and moved the mark on disk. */
  merged: Seqs | null;
}

/**
 * Every insert_id the embedded store holds, as a two-level index: the slots
 * table on disk (insert-id-slots.ts), and the pairs not yet merged into it,
 * kept in this process's memory.
 *
 * Why two levels: insert_ids are random, so a commit of n pairs wrote n
 * scattered slot pages (4 KiB each, twice: WAL, then checkpoint). That was two
 * thirds of the cost of a stored event. Pending pairs are instead merged in
 * slot order, a slice of the slot space per commit; the pairs of a slice share
 * their pages (bench/README.md has the figures). They are held in JS, not in
 * a TEMP table: an in-memory B-tree insert cost 5 µs a pair, a Map 1 µs.
 *
 * Nothing is lost with the memory: the event rows and identify claims that
 * hold the pairs are written and made durable by the commit, and they are the
 * truth. Pending pairs are rebuilt from them: on first use, from the rows past
 * the merged mark kept on disk, and at the start of every write, from the rows
 * other connections (another process on the same file) committed since.
 *
 * Since memory does not roll back, the caller reports how each transaction
 * ends: pairs added in it are staged, dropped by rollbackTo (a savepoint: a
 * failed job, a dry run) and rolledBack, and only become pending on committed.
 * The same goes for the marks and a merge's progress.
 *
 * Contract: one index per connection; every event or claim row with an
 * insert_id is written through add(), between beginWrite and endWrite, in a
 * transaction that holds the write lock (BEGIN IMMEDIATE), and committed or
 * rolledBack follows its end.
 */
export class InsertIdIndex {
  private readonly slots: InsertIdSlots;
  private readonly startSlot: SlotOf;
  private readonly mergeAt: number;
  private readonly s;
  /** Committed pairs not yet in the slots, by key, and by bucket of their slot. */
  private readonly pending = new Map<string, Pair>();
  private readonly buckets: Pair[][] = Array.from({ length: BUCKETS }, () => []);
  /** Pairs added by the open transaction. */
  private staged: Pair[] = [];
  private readonly stagedByKey = new Map<string, Pair>();
  /** The newest rows already pending or in the slots; null until read from disk on first use. */
  private seen: Seqs | null = null;
  /** The merged mark on disk when pairs it covers were last dropped from memory. */
  private pruned: Seqs = { e: 0, c: 0 };
  private merge: Merge | null = null;
  private effects: Effects | null = null;
  /** seen.e + seen.c when the open write began, before its catch-up: the merge's pace. */
  private seqAtBegin: number | null = null;
  private lastLookup: { sourceId: string; slotOfId: Map<string, number> } | null = null;

  constructor(
    private readonly db: Db,
    opts: InsertIdIndexOptions = {},
  ) {
    this.startSlot = opts.slotOf ?? slotOf;
    this.mergeAt = opts.mergeAt ?? MERGE_AT;
    this.slots = new InsertIdSlots(db, this.startSlot);
    this.s = {
      newest: db.prepare(
        `SELECT (SELECT coalesce(max(seq), 0) FROM events) AS e, (SELECT coalesce(max(seq), 0) FROM identify_claims) AS c,
                events_through AS merged_e, claims_through AS merged_c
         FROM insert_id_index_state`,
      ),
      // In chunks: better-sqlite3 cannot write while a read is open, and a backlog must not be read whole.
      eventsAfter: db.prepare(
        'SELECT seq, source_id, insert_id, id FROM events WHERE seq > ? AND seq <= ? AND insert_id IS NOT NULL ORDER BY seq LIMIT 10000',
      ),
      claimsAfter: db.prepare('SELECT seq, source_id, insert_id FROM identify_claims WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT 10000'),
      addClaimRow: db.prepare('INSERT INTO identify_claims (source_id, insert_id) VALUES (?, ?)'),
      take: db.prepare('INSERT INTO insert_id_slots (slot, event_seq, claim_seq) VALUES (?, ?, ?) ON CONFLICT (slot) DO NOTHING'),
      setMerged: db.prepare(
        'UPDATE insert_id_index_state SET events_through = max(events_through, ?), claims_through = max(claims_through, ?)',
      ),
    };
  }

  /** Pairs not yet in the slots, committed or staged. */
  get pendingCount(): number {
    return this.pending.size + this.staged.length;
  }

  /** Whether a merge is under way. */
  get merging(): boolean {
    return this.merge !== null;
  }

  /** Call first in every write transaction: takes in what other connections committed. */
  beginWrite(): void {
    // A transaction whose end was not reported: its rows, if committed, are read back below.
    this.rolledBack();
    const before = this.seen;
    const after = this.catchUp();
    // The rows other connections wrote count toward the pace; on first use, the backlog does not.
    this.seqAtBegin = before === null ? after.e + after.c : before.e + before.c;
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
    const seen = this.seen ?? { e: n.merged_e, c: n.merged_c };
    const grown = n.e + n.c - (this.seqAtBegin ?? seen.e + seen.c);
    this.seqAtBegin = null;
    const effects: Effects = { seen: { e: n.e, c: n.c }, merge: this.merge, placed: null, merged: null };
    this.effects = effects;
    if (effects.merge === null) {
      // A merge covers committed rows only (seen before this transaction's own);
      // seqs of events without an insert_id count too: an upper bound, and free.
      const size = seen.e - n.merged_e + (seen.c - n.merged_c);
      if (size < this.mergeAt) return;
      effects.merge = { e: seen.e, c: seen.c, size, next: 0 };
    }
    const m = effects.merge;
    const from = m.next;
    const to = Math.min(BUCKETS, from + Math.max(1, Math.ceil((BUCKETS * Math.max(MERGE_FLOOR, 2 * grown)) / m.size)));
    const slice: Pair[] = [];
    for (let b = from; b < to; b++) for (const p of this.buckets[b]!) if (covered(p, m)) slice.push(p);
    slice.sort((a, b) => a.slot - b.slot);
    for (const p of slice) {
      // A taken start slot: another pair's, or this pair's from a merge cut short or done elsewhere.
      if (this.s.take.run(p.slot, p.eventSeq, p.claimSeq).changes === 0) this.slots.place(p.sourceId, p.insertId, p.eventSeq, p.claimSeq);
    }
    effects.placed = { from, to, upTo: { e: m.e, c: m.c } };
    if (to < BUCKETS) {
      effects.merge = { ...m, next: to };
      return;
    }
    this.s.setMerged.run(m.e, m.c);
    effects.merged = { e: m.e, c: m.c };
    effects.merge = null;
  }

  /** Call right after COMMIT succeeded. */
  committed(): void {
    for (const p of this.staged) this.addPending(p);
    this.staged = [];
    this.stagedByKey.clear();
    const ef = this.effects;
    this.effects = null;
    if (ef === null) return;
    this.seen = ef.seen;
    this.merge = ef.merge;
    if (ef.placed !== null) {
      const upTo = ef.placed.upTo;
      for (let b = ef.placed.from; b < ef.placed.to; b++) this.dropFromBucket(b, (p) => covered(p, upTo));
    }
    if (ef.merged !== null) this.pruned = { e: Math.max(this.pruned.e, ef.merged.e), c: Math.max(this.pruned.c, ef.merged.c) };
  }

  /** Call after ROLLBACK, or when COMMIT failed: nothing of the transaction happened. */
  rolledBack(): void {
    this.staged = [];
    this.stagedByKey.clear();
    this.effects = null;
    this.seqAtBegin = null;
  }

  /** Where a savepoint stands, for rollbackTo. */
  savepoint(): number {
    return this.staged.length;
  }

  /** Call after ROLLBACK TO the savepoint `mark` came from. */
  rollbackTo(mark: number): void {
    for (const p of this.staged.splice(mark)) this.stagedByKey.delete(p.key);
  }

  /** insert_id → event id (null for an identify) of the pairs stored for the source. */
  find(sourceId: string, insertIds: string[]): Map<string, string | null> {
    // Outside a write (tests, tools), catch up first, in a read transaction
    // so the rows and the newest seqs come from one snapshot.
    if (!this.db.inTransaction || this.seen === null) this.db.transaction(() => this.catchUp())();
    // The pass that looks pairs up then adds them: their slots are hashed once.
    const slotOfId = new Map<string, number>();
    this.lastLookup = { sourceId, slotOfId };
    const found = new Map<string, string | null>();
    const rest: { id: string; slot: number }[] = [];
    for (const id of insertIds) {
      const k = keyOf(sourceId, id);
      const p = this.stagedByKey.get(k) ?? this.pending.get(k);
      if (p !== undefined) {
        found.set(id, p.eventId);
        continue;
      }
      const slot = this.startSlot(sourceId, id);
      slotOfId.set(id, slot);
      rest.push({ id, slot });
    }
    if (rest.length > 0) for (const [id, eventId] of this.slots.findFrom(sourceId, rest)) found.set(id, eventId);
    return found;
  }

  /**
   * Records stored pairs: an event's (its row and id), or an identify's
   * (`eventSeq` null), whose claim row is written here.
   */
  add(sourceId: string, pairs: { insertId: string; eventSeq: number | null; eventId: string | null }[]): void {
    for (const p of pairs) {
      const key = keyOf(sourceId, p.insertId);
      // The caller looked first under the write lock, so this means a bug, not a race.
      if (this.stagedByKey.has(key) || this.pending.has(key)) throw new Error(`insert_id ${p.insertId} is already stored for source ${sourceId}`);
      const claimSeq = p.eventSeq === null ? Number(this.s.addClaimRow.run(sourceId, p.insertId).lastInsertRowid) : null;
      const slot = this.slotFor(sourceId, p.insertId);
      const pair: Pair = { key, sourceId, slot, insertId: p.insertId, eventSeq: p.eventSeq, claimSeq, eventId: p.eventId };
      this.staged.push(pair);
      this.stagedByKey.set(key, pair);
    }
  }

  private slotFor(sourceId: string, insertId: string): number {
    const l = this.lastLookup;
    return (l?.sourceId === sourceId ? l.slotOfId.get(insertId) : undefined) ?? this.startSlot(sourceId, insertId);
  }

  /**
   * Takes in rows committed since `seen` (by other connections, or all past
   * the merged mark on first use). They are committed: memory changes at once.
   * Runs inside a transaction, so the table cannot move meanwhile.
   */
  private catchUp(): Seqs {
    const n = this.s.newest.get() as Newest;
    if (this.seen === null) {
      this.seen = { e: n.merged_e, c: n.merged_c };
      this.pruned = { ...this.seen };
    }
    // Another connection finished a merge: what it covers is in the slots now.
    if (n.merged_e > this.pruned.e || n.merged_c > this.pruned.c) {
      const upTo = { e: n.merged_e, c: n.merged_c };
      for (let b = 0; b < BUCKETS; b++) this.dropFromBucket(b, (p) => covered(p, upTo));
      this.pruned = upTo;
      if (this.merge !== null && upTo.e >= this.merge.e && upTo.c >= this.merge.c) this.merge = null;
    }
    const seen = this.seen;
    if (n.e === seen.e && n.c === seen.c) return seen;
    // Rows up to the merged mark are in the slots already.
    for (let after = Math.max(seen.e, n.merged_e); after < n.e; ) {
      const rows = this.s.eventsAfter.all(after, n.e) as { seq: number; source_id: string; insert_id: string; id: string }[];
      for (const r of rows) this.load(r.source_id, r.insert_id, r.seq, null, r.id);
      after = rows.length === 0 ? n.e : rows.at(-1)!.seq;
    }
    for (let after = Math.max(seen.c, n.merged_c); after < n.c; ) {
      const rows = this.s.claimsAfter.all(after, n.c) as { seq: number; source_id: string; insert_id: string }[];
      for (const r of rows) this.load(r.source_id, r.insert_id, null, r.seq, null);
      after = rows.length === 0 ? n.c : rows.at(-1)!.seq;
    }
    this.seen = { e: n.e, c: n.c };
    return this.seen;
  }

  private load(sourceId: string, insertId: string, eventSeq: number | null, claimSeq: number | null, eventId: string | null): void {
    const key = keyOf(sourceId, insertId);
    if (this.pending.has(key)) return;
    this.addPending({ key, sourceId, slot: this.startSlot(sourceId, insertId), insertId, eventSeq, claimSeq, eventId });
  }

  private addPending(p: Pair): void {
    this.pending.set(p.key, p);
    this.buckets[Math.floor(p.slot / BUCKET_WIDTH)]!.push(p);
  }

  private dropFromBucket(b: number, drop: (p: Pair) => boolean): void {
    const bucket = this.buckets[b]!;
    if (bucket.length === 0) return;
    const kept: Pair[] = [];
    for (const p of bucket) {
      if (drop(p)) this.pending.delete(p.key);
      else kept.push(p);
    }
    this.buckets[b] = kept;
  }
}

interface Newest {
  e: number;
  c: number;
  merged_e: number;
  merged_c: number;
}

/** Whether a pair's row is among those up to `upTo`. */
function covered(p: Pair, upTo: Seqs): boolean {
  return p.eventSeq !== null ? p.eventSeq <= upTo.e : p.claimSeq! <= upTo.c;
}

function keyOf(sourceId: string, insertId: string): string {
  return `${sourceId}\u0000${insertId}`;
}
