/** Most of the slots in use (removed ones included) before the table grows or is rebuilt. */
const MAX_LOAD = 0.75;

const INT32_MAX = 0x7fffffff;

/**
 * An open-addressing hash table (linear probing) from 32-bit hashes to
 * refs: nonzero integers that name the row holding a key. Two typed arrays,
 * no object per entry: 8 bytes a slot while every ref fits in 31 bits (an
 * Int32Array), 12 after (a Float64Array). Between a 3/8 and 3/4 load, that is
 * 10.7 to 21.3 bytes a stored key; growing keeps the old arrays until the
 * new ones are filled, so the peak is half as much again, and takes a pause
 * (130 ms to double at 3 million keys, 180 ms at 6 million).
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
  private mask: number;
  /** Slots not empty, removed ones included. */
  private used = 0;
  /** Slots that hold a ref. */
  private live = 0;

  constructor(private readonly initialCapacity = 1024) {
    this.hashes = new Uint32Array(initialCapacity);
    this.refs = new Int32Array(initialCapacity);
    this.mask = initialCapacity - 1;
    if ((initialCapacity & this.mask) !== 0) throw new Error('capacity must be a power of two');
  }

  get size(): number {
    return this.live;
  }

  get capacity(): number {
    return this.hashes.length;
  }

  /** Memory held by the two arrays. */
  get bytes(): number {
    return this.hashes.byteLength + this.refs.byteLength;
  }

  add(hash: number, ref: number): void {
    if (this.used + 1 > this.capacity * MAX_LOAD) this.rebuild();
    if ((ref > INT32_MAX || ref < -INT32_MAX) && this.refs instanceof Int32Array) this.refs = Float64Array.from(this.refs);
    const h = hash >>> 0 || 1;
    const { hashes, refs, mask } = this;
    let i = h & mask;
    // A removed slot is taken again: nothing is looked for by its old contents.
    while (hashes[i] !== 0 && refs[i] !== 0) i = (i + 1) & mask;
    if (hashes[i] === 0) this.used++;
    hashes[i] = h;
    refs[i] = ref;
    this.live++;
  }

  /** Appends to `out` the refs of every key added with this hash. */
  refsOf(hash: number, out: number[]): void {
    const h = hash >>> 0 || 1;
    const { hashes, refs, mask } = this;
    for (let i = h & mask; hashes[i] !== 0; i = (i + 1) & mask) {
      if (hashes[i] === h && refs[i] !== 0) out.push(refs[i]!);
    }
  }

  /** Removes one key: the one added with this hash and ref. Returns whether there was one. */
  remove(hash: number, ref: number): boolean {
    const h = hash >>> 0 || 1;
    const { hashes, refs, mask } = this;
    for (let i = h & mask; hashes[i] !== 0; i = (i + 1) & mask) {
      if (hashes[i] === h && refs[i] === ref) {
        refs[i] = 0;
        this.live--;
        return true;
      }
    }
    return false;
  }

  /** Empties the table, keeping its arrays when they are no larger than it started. */
  clear(): void {
    if (this.capacity > this.initialCapacity) {
      this.hashes = new Uint32Array(this.initialCapacity);
      this.refs = new Int32Array(this.initialCapacity);
      this.mask = this.initialCapacity - 1;
    } else {
      this.hashes.fill(0);
      this.refs.fill(0);
    }
    this.used = 0;
    this.live = 0;
  }

  /**
   * Moves every live key into new arrays: twice as many slots when more
   * than half hold one, else as many (which only clears out removed ones).
   */
  private rebuild(): void {
    const { hashes, refs } = this;
    const capacity = this.live * 2 >= hashes.length ? hashes.length * 2 : hashes.length;
    this.hashes = new Uint32Array(capacity);
    this.refs = refs instanceof Int32Array ? new Int32Array(capacity) : new Float64Array(capacity);
    this.mask = capacity - 1;
    this.used = 0;
    this.live = 0;
    for (let i = 0; i < hashes.length; i++) if (hashes[i] !== 0 && refs[i] !== 0) this.add(hashes[i]!, refs[i]!);
  }
}
