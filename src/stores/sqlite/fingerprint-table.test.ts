import { describe, expect, it } from 'vitest';
import { FingerprintTable } from './fingerprint-table.js';
import { pairHash } from './insert-id-hash.js';

const refsOf = (t: FingerprintTable, hash: number): number[] => {
  const out: number[] = [];
  t.refsOf(hash, out);
  return out.sort((a, b) => a - b);
};

describe('fingerprint table', () => {
  it('answers every ref added under a hash, and nothing for a hash never added', () => {
    const t = new FingerprintTable(8, 1);
    t.add(5, 100);
    t.add(13, 101); // same start slot as 5 in 8 slots, another hash
    t.add(5, -7);
    expect(refsOf(t, 5)).toEqual([-7, 100]);
    expect(refsOf(t, 13)).toEqual([101]);
    expect(refsOf(t, 21)).toEqual([]);
    expect(t.size).toBe(3);
  });

  it('keeps a hash of 0 (the mark of an empty slot) as another hash, found again', () => {
    const t = new FingerprintTable(8, 1);
    t.add(0, 1);
    expect(refsOf(t, 0)).toEqual([1]);
  });

  it('when every key has one hash, answers all of them, through growth and wrapping past the last slot', () => {
    const t = new FingerprintTable(8, 1);
    for (let ref = 1; ref <= 1000; ref++) t.add(0xffffffff, ref);
    expect(1000 / t.capacity).toBeLessThanOrEqual(4 / 5);
    expect(refsOf(t, 0xffffffff)).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
  });

  it('grows as it fills, keeping each ref under its hash, always 2/3 to 4/5 full: no step where memory doubles', () => {
    const t = new FingerprintTable(512);
    const n = 300_000;
    let fullest = 0;
    let emptiest = 1;
    for (let i = 1; i <= n; i++) {
      t.add(pairHash('src_1', `id-${i}`), i);
      if (i >= 50_000 && i % 1000 === 0) {
        fullest = Math.max(fullest, i / t.capacity);
        emptiest = Math.min(emptiest, i / t.capacity);
      }
    }
    expect(t.size).toBe(n);
    // Rounding up a segment's new size leaves it a hair under 2/3.
    expect(emptiest).toBeGreaterThan(0.66);
    expect(fullest).toBeLessThanOrEqual(4 / 5);
    expect(t.bytes).toBe(t.capacity * 8);
    for (let i = 1; i <= n; i += 997) expect(refsOf(t, pairHash('src_1', `id-${i}`))).toContain(i);
  });

  it('removes one ref, keeps the others of its hash and of the probe run, and reuses the slot', () => {
    const t = new FingerprintTable(8, 1);
    t.add(3, 1);
    t.add(3, 2);
    t.add(11, 3); // starts at slot 3 too, lies past the two above
    expect(t.remove(3, 1)).toBe(true);
    expect(t.remove(3, 1)).toBe(false);
    expect(refsOf(t, 3)).toEqual([2]);
    expect(refsOf(t, 11)).toEqual([3]);
    t.add(11, 4);
    expect(refsOf(t, 11)).toEqual([3, 4]);
    expect(t.size).toBe(3);
  });

  it('a table of mostly removed keys is rebuilt at its size instead of growing', () => {
    const t = new FingerprintTable(1024, 1);
    for (let round = 0; round < 20; round++) {
      for (let i = 1; i <= 500; i++) t.add(pairHash('s', `${round}-${i}`), round * 1000 + i);
      for (let i = 1; i <= 500; i++) expect(t.remove(pairHash('s', `${round}-${i}`), round * 1000 + i)).toBe(true);
    }
    t.add(pairHash('s', 'last'), 7);
    expect(t.capacity).toBe(1024);
    expect(refsOf(t, pairHash('s', 'last'))).toEqual([7]);
  });

  it('refs past 31 bits are kept exactly (the refs move to 64-bit floats)', () => {
    const t = new FingerprintTable(8, 1);
    t.add(1, 5);
    t.add(2, 2 ** 40 + 3);
    t.add(3, -(2 ** 35));
    expect([refsOf(t, 1), refsOf(t, 2), refsOf(t, 3)]).toEqual([[5], [2 ** 40 + 3], [-(2 ** 35)]]);
    for (let i = 10; i < 100; i++) t.add(i, i);
    expect(refsOf(t, 2)).toEqual([2 ** 40 + 3]);
    expect(t.bytes).toBe(t.capacity * 12);
  });

  it('grows a segment at a time: no add takes more than a few percent more memory, and every key is found and removable throughout', () => {
    const t = new FingerprintTable(512);
    const live = new Map<number, number>();
    const removed: number[] = [];
    let largestStep = 0;
    for (let ref = 1; ref <= 60_000; ref++) {
      const h = pairHash('s', `k${ref}`);
      const before = t.bytes;
      t.add(h, ref);
      live.set(ref, h);
      if (ref > 20_000) largestStep = Math.max(largestStep, (t.bytes - before) / before);
      if (ref % 7 === 0) {
        const r = Math.floor(ref / 3);
        if (live.has(r)) {
          expect(t.remove(live.get(r)!, r)).toBe(true);
          live.delete(r);
          removed.push(r);
        }
      }
      if (ref % 5_000 === 0) {
        const lost = [...live].filter(([r, hr]) => !refsOf(t, hr).includes(r));
        expect(lost).toEqual([]);
      }
    }
    // A whole table doubling at once would be a step of 1 (100%).
    expect(largestStep).toBeGreaterThan(0);
    expect(largestStep).toBeLessThan(0.02);
    expect(t.size).toBe(live.size);
    for (const [r, h] of live) expect(refsOf(t, h)).toEqual([r]);
    for (const r of removed) expect(refsOf(t, pairHash('s', `k${r}`))).not.toContain(r);
  });

  it('refuses a capacity or a segment count it cannot split evenly', () => {
    expect(() => new FingerprintTable(100)).toThrow();
    expect(() => new FingerprintTable(256, 256)).toThrow();
    expect(() => new FingerprintTable(1024, 3)).toThrow();
    expect(new FingerprintTable(512, 256).capacity).toBe(512);
  });

  it('clear empties it and gives back the memory it grew to', () => {
    const t = new FingerprintTable(8, 1);
    for (let i = 1; i <= 100; i++) t.add(i, i);
    t.clear();
    expect([t.size, t.capacity, refsOf(t, 5)]).toEqual([0, 8, []]);
  });
});

describe('pair hash', () => {
  it('depends on the source and the insert_id, and keeps ("a", "bc") and ("ab", "c") apart', () => {
    const a = pairHash('src_1', 'order-1');
    expect(Number.isInteger(a) && a >= 0 && a < 2 ** 32).toBe(true);
    expect(pairHash('src_1', 'order-1')).toBe(a);
    expect(pairHash('src_2', 'order-1')).not.toBe(a);
    expect(pairHash('src_1', 'order-2')).not.toBe(a);
    expect(pairHash('a', 'bc')).not.toBe(pairHash('ab', 'c'));
    expect(pairHash('', 'x')).not.toBe(pairHash('x', ''));
    // Called for two sources in turn, the source's kept part is not mixed up.
    expect([pairHash('src_2', 'order-1'), pairHash('src_1', 'order-1')]).toEqual([pairHash('src_2', 'order-1'), a]);
  });

  it('spreads similar insert_ids: as few equal hashes and as even low bits as random ones would give', () => {
    const n = 200_000;
    const seen = new Set<number>();
    const lowBits = new Uint32Array(1024);
    let equal = 0;
    for (let i = 0; i < n; i++) {
      const h = pairHash('src_1', `order-${i}`);
      if (seen.has(h)) equal++;
      seen.add(h);
      lowBits[h & 1023]!++;
    }
    // Random 32-bit hashes: about n^2 / 2^33 = 4.7 equal pairs; each of 1024 low-bit values about 195 times.
    expect(equal).toBeLessThan(20);
    expect(Math.max(...lowBits)).toBeLessThan(270);
    expect(Math.min(...lowBits)).toBeGreaterThan(130);
  });
});
