import { describe, expect, it } from 'vitest';
import { FingerprintTable } from './fingerprint-table.js';

/** Random adds, removes and clears against a plain model, with hashes and refs chosen to hit the edges. */

/** mulberry32: a seeded PRNG, so a failure names its seed. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** What the table promises: a hash is its 32 bits, unsigned, and 0 is the same hash as 1. */
const norm = (hash: number): number => hash >>> 0 || 1;

/** The segments' own bookkeeping, and an empty slot in each (else a lookup would never end). */
function checkSegments(t: FingerprintTable): void {
  const segs = t.segmentViews;
  let live = 0;
  for (const s of segs) {
    let used = 0;
    let l = 0;
    for (let i = 0; i < s.hashes.length; i++) {
      if (s.hashes[i] !== 0) used++;
      if (s.hashes[i] !== 0 && s.refs[i] !== 0) l++;
    }
    // One expect only on a mismatch: expect is slow, and this runs for every segment.
    if (s.used !== used || s.live !== l || used > s.hashes.length * 0.8 || s.refs.length !== s.hashes.length) {
      expect({ used: s.used, live: s.live, slots: s.hashes.length, refs: s.refs.length }).toEqual({ used, live: l, slots: s.hashes.length, refs: s.hashes.length });
      expect(used).toBeLessThanOrEqual(s.hashes.length * 0.8);
    }
    live += l;
  }
  expect(t.size).toBe(live);
}

function hashPool(r: () => number): number[] {
  const pool = [0, 1, 2, 0xffffffff, 0xfffffffe, 0x80000000, 0x80000001, 0x7fffffff, 0x00ffffff, 0x01000000, -1, -2, -0x80000000];
  for (let k = 0; k < 256; k += 17) pool.push(k << 24, ((k << 24) | 5) >>> 0, ((k << 24) | 0xffffff) >>> 0); // top bits only
  for (let k = 0; k < 16; k++) pool.push(k, 0x80000000 + k, (k << 12) >>> 0, ((k << 16) | 3) >>> 0); // low bits, middle bits
  for (let k = 0; k < 20; k++) pool.push(Math.floor(r() * 2 ** 32));
  return pool;
}

function refPool(): number[] {
  const refs = [1, 2, 3, -1, -2, 0x7fffffff, -0x7fffffff, 0x80000000, -0x80000000, 2 ** 40 + 3, -(2 ** 35), 2 ** 53 - 1];
  for (let k = 4; k < 60; k++) refs.push(k, -k);
  return refs;
}

function run(seed: number, initialCapacity: number, segments: number, steps: number, bigRefs: boolean, cleared: number): void {
  const r = rng(seed);
  const hashes = hashPool(r);
  const refs = refPool().filter((x) => bigRefs || Math.abs(x) <= 0x7fffffff);
  const pick = <T>(a: T[]): T => a[Math.floor(r() * a.length)]!;
  const t = new FingerprintTable(initialCapacity, segments);
  /** Model: normalized hash → refs (a multiset: the table keeps a pair added twice twice). */
  const model = new Map<number, number[]>();
  let size = 0;
  const expectLookup = (hash: number) => {
    const out: number[] = [];
    t.refsOf(hash, out);
    const got = out.sort((a, b) => a - b);
    const want = [...(model.get(norm(hash)) ?? [])].sort((a, b) => a - b);
    if (got.length !== want.length || got.some((x, i) => x !== want[i])) expect([seed, hash, got]).toEqual([seed, hash, want]);
  };
  let nextRef = 1_000;
  for (let step = 0; step < steps; step++) {
    const p = r();
    if (p < 1 / cleared) {
      const grown = t.capacity > initialCapacity;
      t.clear();
      model.clear();
      size = 0;
      expect(t.capacity).toBe(initialCapacity);
      if (grown) expect(t.bytes).toBe(initialCapacity * 8);
    } else if (p < 0.6) {
      const hash = pick(hashes);
      // Mostly fresh refs, sometimes a pool ref (negative, past 31 bits, or one already under this hash).
      const ref = r() < 0.7 ? (r() < 0.5 ? nextRef++ : -nextRef++) : pick(refs);
      t.add(hash, ref);
      const l = model.get(norm(hash)) ?? [];
      l.push(ref);
      model.set(norm(hash), l);
      size++;
    } else if (p < 0.85 && size > 0) {
      // Remove a pair that is there.
      const keys = [...model.keys()];
      const h = pick(keys);
      const l = model.get(h)!;
      const i = Math.floor(r() * l.length);
      // Under one of the hashes that stand for it (0 for 1, a negative for its unsigned self).
      const asked = h === 1 && r() < 0.5 ? 0 : h >= 0x80000000 && r() < 0.5 ? h | 0 : h;
      if (!t.remove(asked, l[i]!)) expect([seed, step, asked, l[i]]).toEqual('removed');
      l.splice(i, 1);
      if (l.length === 0) model.delete(h);
      size--;
    } else {
      // Remove a pair that is not there: the hash or the ref is off.
      const hash = pick(hashes);
      const ref = pick(refs);
      const there = (model.get(norm(hash)) ?? []).includes(ref);
      if (t.remove(hash, ref) !== there) expect([seed, step, hash, ref, !there]).toEqual([seed, step, hash, ref, there]);
      if (there) {
        const l = model.get(norm(hash))!;
        l.splice(l.indexOf(ref), 1);
        if (l.length === 0) model.delete(norm(hash));
        size--;
      }
    }
    if (t.size !== size) expect([seed, step, t.size]).toEqual([seed, step, size]);
    expectLookup(pick(hashes));
    if (step % 500 === 0) {
      checkSegments(t);
      for (const h of hashes) expectLookup(h);
    }
  }
  checkSegments(t);
  for (const h of hashes) expectLookup(h);
  for (const h of model.keys()) expectLookup(h);
  // The arrays: never smaller than a segment started, 8 bytes a slot, or 12 for a segment that took a ref past 31 bits.
  const segs = t.segmentViews;
  expect(segs.length).toBe(segments);
  let bytes = 0;
  for (const s of segs) {
    expect(s.hashes.length).toBeGreaterThanOrEqual(initialCapacity / segments);
    bytes += s.hashes.length * (s.refs instanceof Float64Array ? 12 : 8);
  }
  expect(t.bytes).toBe(bytes);
  expect(t.capacity).toBe(segs.reduce((n, s) => n + s.hashes.length, 0));
}

describe('fingerprint table against a model', () => {
  const configs: [number, number][] = [
    [2, 1],
    [8, 1],
    [4096, 1],
    [4, 2],
    [16, 8],
    [512, 256],
    [1 << 16, 256],
  ];
  for (const [cap, segs] of configs) {
    it(`${cap} slots in ${segs} segments: random adds, removes and clears, refs small, negative and past 31 bits`, () => {
      for (let seed = 1; seed <= 4; seed++) run(seed * 7919 + cap + segs, cap, segs, 4_000, seed % 2 === 0, seed === 4 ? 1_000_000 : 400);
    });
  }

  it('one hash for every key, removed and added again in waves: the probe run wraps, rebuilds drop removed slots, and every lookup ends', () => {
    for (const [cap, segs] of configs) {
      for (const hash of [0, 1, 0xffffffff, 0x80000000, 0x00ffffff]) {
        const t = new FingerprintTable(cap, segs);
        const live = new Set<number>();
        let ref = 0;
        for (let wave = 0; wave < 6; wave++) {
          for (let i = 0; i < 150; i++) {
            ref++;
            const x = ref % 3 === 0 ? -(2 ** 32) - ref : ref;
            t.add(hash, x);
            live.add(x);
          }
          let k = 0;
          for (const x of [...live]) if (k++ % 3 !== 0) expect(t.remove(hash === 0 ? 1 : hash, x)).toBe(live.delete(x));
          const out: number[] = [];
          t.refsOf(hash, out);
          expect(out.sort((a, b) => a - b)).toEqual([...live].sort((a, b) => a - b));
          checkSegments(t);
        }
      }
    }
  });

  it('a segment that took a ref past 31 bits keeps it through its rebuilds, and removes it after', () => {
    const t = new FingerprintTable(512, 256);
    const hash = 0xab000007; // segment 0xab
    t.add(hash, 2 ** 31);
    t.add(hash, -(2 ** 31));
    for (let i = 1; i <= 200; i++) t.add((0xab000000 | (i * 256)) >>> 0, i); // same segment, same start slot while small
    const out: number[] = [];
    t.refsOf(hash, out);
    expect(out.sort((a, b) => a - b)).toEqual([-(2 ** 31), 2 ** 31]);
    expect(t.remove(hash, 2 ** 31)).toBe(true);
    expect(t.remove(hash, 2 ** 31)).toBe(false);
    for (let i = 1; i <= 200; i++) expect(t.remove((0xab000000 | (i * 256)) >>> 0, i)).toBe(true);
    checkSegments(t);
    expect(t.size).toBe(1);
  });
});
