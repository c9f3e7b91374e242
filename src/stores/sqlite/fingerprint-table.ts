/** Slots in use (removed ones included) at which the table starts moving to new arrays. */
const GROW_AT = 0.75;

/**
 * Old slots moved to the new arrays with each add while a move is under way.
 * A move starts at 3/4 of the slots in use and ends within 1/32 of them more
 * adds, so the old arrays never pass about 0.78 and no probe run gets long;
 * each add moves at most this many slots, so no add pauses.
 */
const MOVE_PER_ADD = 32;

const INT32_MAX = 0x7fffffff;

/**
 * An open-addressing hash table (linear probing) from 32-bit hashes to
 * refs: nonzero integers that name the row holding a key. Two typed arrays,
 * no object per entry: 8 bytes a slot while every ref fits in 31 bits (an
 * Int32Array), 12 after (a Float64Array). Between a 3/8 and 3/4 load, that
 * is 10.7 to 21.3 bytes a stored key. Growing fills new arrays of twice the
 * slots a few old slots per add, while the old ones still answer; it holds
 * both meanwhile (half as much again), but never pauses: doubling at once
 * took 130 ms at 3 million keys and 180 ms at 6 million, inside a commit.
 *
 * Only the hash is kept, not the key: its low bits choose the slot, and all
 * 32 are compared. The table therefore answers "maybe" (refs whose key has
 * the same hash) and never "yes"; the caller checks each ref against its
 * row. Keeping a second, independent hash as the fingerprint would make
 * false "maybe"s rarer still, but growing needs the bits that choose the
 * slot, so both would be kept: 12 bytes a slot instead of 8. With one
 * hash, a key that was never added gets a wrong ref for about n / 2^32 of
 * lookups (1 in 860 at 5 million keys).
 *
 * The table does not refuse a key added twice (with two refs, both are
 * answered); the caller never adds one.
 */
export class FingerprintTable {
  /** Each slot's hash; 0 marks an empty slot (a hash of 0 is kept as 1). */
  private hashes: Uint32Array;
  /** Each slot's ref; 0 marks one removed: still part of the probe runs through it. */
  private refs: Int32Array | Float64Array;
  /** Slots not empty, removed ones included. */
  private used = 0;
  /** Slots that hold a ref. */
  private live = 0;
  /**
   * The arrays being filled while a move is under way, or null. The old
   * arrays answer every lookup until the move ends: slots below `moved` are
   * already copied, so what changes there changes in both.
   */
  private next: { hashes: Uint32Array; refs: Int32Array | Float64Array; used: number } | null = null;
  private moved = 0;

  constructor(private readonly initialCapacity = 1024) {
    if ((initialCapacity & (initialCapacity - 1)) !== 0 || initialCapacity < 2) throw new Error('capacity must be a power of two');
    this.hashes = new Uint32Array(initialCapacity);
    this.refs = new Int32Array(initialCapacity);
  }

  get size(): number {
    return this.live;
  }

  get capacity(): number {
    return this.hashes.length;
  }

  /** Whether a move to new arrays is under way (tests). */
  get moving(): boolean {
    return this.next !== null;
  }

  /** Memory held by the arrays, both sets during a move. */
  get bytes(): number {
    const next = this.next === null ? 0 : this.next.hashes.byteLength + this.next.refs.byteLength;
    return this.hashes.byteLength + this.refs.byteLength + next;
  }

  add(hash: number, ref: number): void {
    if (this.next === null && this.used + 1 > this.capacity * GROW_AT) this.startMove();
    if ((ref > INT32_MAX || ref < -INT32_MAX) && this.refs instanceof Int32Array) {
      this.refs = Float64Array.from(this.refs);
      if (this.next !== null) this.next.refs = Float64Array.from(this.next.refs);
    }
    const h = hash >>> 0 || 1;
    const i = place(this.hashes, this.refs, h, ref);
    if (i < 0) this.used++;
    this.live++;
    const next = this.next;
    if (next !== null) {
      // A slot the move has passed is not copied again: the key goes in now.
      if ((i < 0 ? -i - 1 : i) < this.moved && place(next.hashes, next.refs, h, ref) < 0) next.used++;
      this.moveSome(MOVE_PER_ADD);
    }
  }

  /** Appends to `out` the refs of every key added with this hash. */
  refsOf(hash: number, out: number[]): void {
    const h = hash >>> 0 || 1;
    const { hashes, refs } = this;
    const mask = hashes.length - 1;
    for (let i = h & mask; hashes[i] !== 0; i = (i + 1) & mask) {
      if (hashes[i] === h && refs[i] !== 0) out.push(refs[i]!);
    }
  }

  /** Removes one key: the one added with this hash and ref. Returns whether there was one. */
  remove(hash: number, ref: number): boolean {
    const h = hash >>> 0 || 1;
    const i = unplace(this.hashes, this.refs, h, ref);
    if (i === -1) return false;
    this.live--;
    if (this.next !== null && i < this.moved) unplace(this.next.hashes, this.next.refs, h, ref);
    return true;
  }

  /** Empties the table, keeping its arrays when they are no larger than it started. */
  clear(): void {
    this.next = null;
    this.moved = 0;
    if (this.capacity > this.initialCapacity) {
      this.hashes = new Uint32Array(this.initialCapacity);
      this.refs = new Int32Array(this.initialCapacity);
    } else {
      this.hashes.fill(0);
      this.refs.fill(0);
    }
    this.used = 0;
    this.live = 0;
  }

  /**
   * Starts moving every live key into new arrays: twice as many slots when
   * more than half the slots hold one, else as many (which only clears out
   * removed ones).
   */
  private startMove(): void {
    const capacity = this.live * 2 >= this.capacity ? this.capacity * 2 : this.capacity;
    this.next = {
      hashes: new Uint32Array(capacity),
      refs: this.refs instanceof Int32Array ? new Int32Array(capacity) : new Float64Array(capacity),
      used: 0,
    };
    this.moved = 0;
  }

  /** Copies the live keys of the next `n` old slots; when none are left, the new arrays take over. */
  private moveSome(n: number): void {
    const next = this.next!;
    const { hashes, refs } = this;
    const end = Math.min(hashes.length, this.moved + n);
    for (let i = this.moved; i < end; i++) {
      if (hashes[i] !== 0 && refs[i] !== 0 && place(next.hashes, next.refs, hashes[i]!, refs[i]!) < 0) next.used++;
    }
    this.moved = end;
    if (end < hashes.length) return;
    this.hashes = next.hashes;
    this.refs = next.refs;
    this.used = next.used;
    this.next = null;
    this.moved = 0;
  }
}

/**
 * Puts a key in the first slot of its probe run that holds none (a removed
 * one is taken again: nothing is looked for by its old contents). Returns the
 * slot, or -(slot + 1) when that slot was empty until now.
 */
function place(hashes: Uint32Array, refs: Int32Array | Float64Array, h: number, ref: number): number {
  const mask = hashes.length - 1;
  let i = h & mask;
  while (hashes[i] !== 0 && refs[i] !== 0) i = (i + 1) & mask;
  const wasEmpty = hashes[i] === 0;
  hashes[i] = h;
  refs[i] = ref;
  return wasEmpty ? -i - 1 : i;
}

/** Marks the slot of this key removed; returns the slot, or -1 when the key is not there. */
function unplace(hashes: Uint32Array, refs: Int32Array | Float64Array, h: number, ref: number): number {
  const mask = hashes.length - 1;
  for (let i = h & mask; hashes[i] !== 0; i = (i + 1) & mask) {
    if (hashes[i] === h && refs[i] === ref) {
      refs[i] = 0;
      return i;
    }
  }
  return -1;
}
