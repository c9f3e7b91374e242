/** Share of a segment's slots in use (removed ones included) past which it is rebuilt. */
const GROW_AT = 0.8;

/**
 * How much a full segment grows. A fifth, not a doubling: the segments fill
 * at the same pace, so whatever one grows by, the whole table grows by
 * within a few thousand keys, and a doubling took the table from 64 to
 * 128 MiB between 6.2 and 6.4 million keys.
 */
const GROWTH = 1.2;

/** Share of its slots a rebuilt segment may hold at most: it can then take a fifth more keys before the next. */
const FULL_AFTER_REBUILD = GROW_AT / GROWTH;

const INT32_MAX = 0x7fffffff;

/**
 * One open-addressing table (linear probing); a FingerprintTable is several.
 * Its size need not be a power of two: a key's first slot is its hash's low
 * 24 bits scaled to the size, so a segment can grow by a fifth.
 */
/** One segment, as segmentViews shows it. */
export type SegmentView = Readonly<Segment>;

interface Segment {
  /** Each slot's hash; 0 marks an empty slot (a hash of 0 is kept as 1). */
  hashes: Uint32Array;
  /** Each slot's ref; 0 marks one removed: still part of the probe runs through it. */
  refs: Int32Array | Float64Array;
  /** Slots not empty, removed ones included. */
  used: number;
  /** Slots that hold a ref. */
  live: number;
}

/**
 * A hash table from 32-bit hashes to refs: nonzero integers that name the
 * row holding a key. Typed arrays, no object per entry: 8 bytes a slot
 * while every ref fits in 31 bits (an Int32Array), 12 after (a
 * Float64Array). Once grown past its first arrays, each segment is between
 * 2/3 and 4/5 full: 10 to 12 bytes a stored key. Linear probing stays
 * short at 4/5: a key never added (most lookups) reads about 13 slots, one
 * or two cache lines.
 *
 * The table is split into segments by the top bits of the hash, each an
 * open-addressing table of its own (linear probing, first slot chosen by
 * the low 24 bits) that grows alone when it fills. A segment is rebuilt at
 * once, so growing holds two copies of one segment, not of the whole table: with
 * one table of 5 million keys, the move from 32 to 64 MiB of arrays held
 * 96 MiB, and doubling at once took 130 to 180 ms inside a commit. With 256
 * segments, the keys spread evenly, a rebuild at 5 million keys moves about
 * 20,000 and the extra memory is a 256th.
 *
 * Only the hash is kept, not the key: all 32 bits are compared. The table
 * therefore answers "maybe" (refs whose key has the same hash) and never
 * "yes"; the caller checks each ref against its row. With one hash, a key
 * that was never added gets a wrong ref for about n / 2^32 of lookups (1 in
 * 860 at 5 million keys).
 *
 * The table does not refuse a key added twice (with two refs, both are
 * answered); the caller never adds one.
 */
export class FingerprintTable {
  private segments: Segment[];
  private readonly shift: number;
  private live = 0;

  /**
   * @param initialCapacity slots in all, a power of two
   * @param segments a power of two, at most 256 and at most initialCapacity / 2
   */
  constructor(
    private readonly initialCapacity = 1024,
    segments = 256,
  ) {
    const pow2 = (n: number): boolean => n >= 1 && (n & (n - 1)) === 0;
    if (!pow2(initialCapacity) || initialCapacity < 2) throw new Error('capacity must be a power of two');
    if (!pow2(segments) || segments > 256 || segments * 2 > initialCapacity) throw new Error('segments must be a power of two, at most 256 and half the capacity');
    // The segment is the hash's top bits; with one segment, no bits at all (a shift by 32 would be one by 0).
    this.shift = 32 - Math.log2(segments);
    this.segments = this.emptySegments(segments);
  }

  get size(): number {
    return this.live;
  }

  get capacity(): number {
    let n = 0;
    for (const s of this.segments) n += s.hashes.length;
    return n;
  }

  /**
   * The segments as they stand, read-only: what the table's own bookkeeping
   * (slots used, slots live, array sizes) can be checked against, as the
   * fuzz test does after its steps. Nothing else reads them.
   */
  get segmentViews(): readonly SegmentView[] {
    return this.segments;
  }

  /** Memory held by the arrays. */
  get bytes(): number {
    let n = 0;
    for (const s of this.segments) n += s.hashes.byteLength + s.refs.byteLength;
    return n;
  }

  add(hash: number, ref: number): void {
    const h = hash >>> 0 || 1;
    const s = this.segmentOf(h);
    if (s.used + 1 > s.hashes.length * GROW_AT) rebuild(s);
    if ((ref > INT32_MAX || ref < -INT32_MAX) && s.refs instanceof Int32Array) s.refs = Float64Array.from(s.refs);
    if (place(s.hashes, s.refs, h, ref)) s.used++;
    s.live++;
    this.live++;
  }

  /** Appends to `out` the refs of every key added with this hash. */
  refsOf(hash: number, out: number[]): void {
    const h = hash >>> 0 || 1;
    const { hashes, refs } = this.segmentOf(h);
    const size = hashes.length;
    for (let i = home(h, size); hashes[i] !== 0; i = i + 1 === size ? 0 : i + 1) {
      if (hashes[i] === h && refs[i] !== 0) out.push(refs[i]!);
    }
  }

  /** Removes one key: the one added with this hash and ref. Returns whether there was one. */
  remove(hash: number, ref: number): boolean {
    const h = hash >>> 0 || 1;
    const s = this.segmentOf(h);
    const { hashes, refs } = s;
    const size = hashes.length;
    for (let i = home(h, size); hashes[i] !== 0; i = i + 1 === size ? 0 : i + 1) {
      if (hashes[i] === h && refs[i] === ref) {
        refs[i] = 0;
        s.live--;
        this.live--;
        return true;
      }
    }
    return false;
  }

  /** Empties the table, keeping its arrays when they are no larger than it started. */
  clear(): void {
    if (this.capacity > this.initialCapacity) {
      this.segments = this.emptySegments(this.segments.length);
    } else {
      for (const s of this.segments) {
        s.hashes.fill(0);
        s.refs.fill(0);
        s.used = s.live = 0;
      }
    }
    this.live = 0;
  }

  private segmentOf(h: number): Segment {
    return this.segments[this.shift === 32 ? 0 : h >>> this.shift]!;
  }

  private emptySegments(n: number): Segment[] {
    const slots = this.initialCapacity / n;
    return Array.from({ length: n }, () => ({ hashes: new Uint32Array(slots), refs: new Int32Array(slots), used: 0, live: 0 }));
  }
}

/**
 * A key's first slot in a segment of `size` slots: the hash's low 24 bits
 * (the top ones chose the segment) scaled to the size. Exact while the size
 * is under 2^29 slots.
 */
function home(h: number, size: number): number {
  return ((h & 0xffffff) * size) / 0x1000000 >>> 0;
}

/**
 * Moves a segment's live keys into new arrays, with slots enough that they
 * fill at most 2/3 of them and one more key fits under 4/5: a fifth more
 * slots (more for a segment of a few slots) when its live keys need them,
 * else as many (which only clears out removed ones). Each add rebuilds
 * before a segment passes 4/5 full, so a probe always meets an empty slot.
 */
function rebuild(s: Segment): void {
  const { hashes, refs } = s;
  let capacity = hashes.length;
  while (s.live > capacity * FULL_AFTER_REBUILD || s.live + 1 > capacity * GROW_AT) capacity = Math.ceil(capacity * GROWTH);
  const next = { hashes: new Uint32Array(capacity), refs: refs instanceof Int32Array ? new Int32Array(capacity) : new Float64Array(capacity) };
  for (let i = 0; i < hashes.length; i++) {
    if (hashes[i] !== 0 && refs[i] !== 0) place(next.hashes, next.refs, hashes[i]!, refs[i]!);
  }
  s.hashes = next.hashes;
  s.refs = next.refs;
  s.used = s.live;
}

/**
 * Puts a key in the first slot of its probe run that holds none (a removed
 * one is taken again: nothing is looked for by its old contents). Returns
 * whether that slot was empty until now.
 */
function place(hashes: Uint32Array, refs: Int32Array | Float64Array, h: number, ref: number): boolean {
  const size = hashes.length;
  let i = home(h, size);
  while (hashes[i] !== 0 && refs[i] !== 0) i = i + 1 === size ? 0 : i + 1;
  const wasEmpty = hashes[i] === 0;
  hashes[i] = h;
  refs[i] = ref;
  return wasEmpty;
}
