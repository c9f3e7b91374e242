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
    const t = new FingerprintTable(8);
    t.add(5, 100);
    t.add(13, 101); // same start slot as 5 in 8 slots, another hash
    t.add(5, -7);
    expect(refsOf(t, 5)).toEqual([-7, 100]);
    expect(refsOf(t, 13)).toEqual([101]);
    expect(refsOf(t, 21)).toEqual([]);
    expect(t.size).toBe(3);
  });

  it('keeps a hash of 0 (the mark of an empty slot) as another hash, found again', () => {
    const t = new FingerprintTable(8);
    t.add(0, 1);
    expect(refsOf(t, 0)).toEqual([1]);
  });

  it('when every key has one hash, answers all of them, through growth and wrapping past the last slot', () => {
    const t = new FingerprintTable(8);
    for (let ref = 1; ref <= 1000; ref++) t.add(0xffffffff, ref);
    expect(t.capacity).toBe(2048);
    expect(refsOf(t, 0xffffffff)).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
  });

  it('doubles as it fills, keeping each ref under its hash', () => {
    const t = new FingerprintTable(16);
    const n = 90_000;
    for (let i = 1; i <= n; i++) t.add(pairHash('src_1', `id-${i}`), i);
    expect(t.size).toBe(n);
    // 90,000 keys at most 3/4 of the slots, no move under way: 2^17 slots of 8 bytes.
    expect(t.moving).toBe(false);
    expect(t.capacity).toBe(2 ** 17);
    expect(t.bytes).toBe(2 ** 17 * 8);
    for (let i = 1; i <= n; i += 997) expect(refsOf(t, pairHash('src_1', `id-${i}`))).toContain(i);
  });

  it('removes one ref, keeps the others of its hash and of the probe run, and reuses the slot', () => {
    const t = new FingerprintTable(8);
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
    const t = new FingerprintTable(1024);
    for (let round = 0; round < 20; round++) {
      for (let i = 1; i <= 500; i++) t.add(pairHash('s', `${round}-${i}`), round * 1000 + i);
      for (let i = 1; i <= 500; i++) expect(t.remove(pairHash('s', `${round}-${i}`), round * 1000 + i)).toBe(true);
    }
    t.add(pairHash('s', 'last'), 7);
    expect(t.capacity).toBe(1024);
    expect(refsOf(t, pairHash('s', 'last'))).toEqual([7]);
  });

  it('refs past 31 bits are kept exactly (the refs move to 64-bit floats)', () => {
    const t = new FingerprintTable(8);
    t.add(1, 5);
    t.add(2, 2 ** 40 + 3);
    t.add(3, -(2 ** 35));
    expect([refsOf(t, 1), refsOf(t, 2), refsOf(t, 3)]).toEqual([[5], [2 ** 40 + 3], [-(2 ** 35)]]);
    for (let i = 10; i < 100 || t.moving; i++) t.add(i, i);
    expect(refsOf(t, 2)).toEqual([2 ** 40 + 3]);
    expect(t.bytes).toBe(t.capacity * 12);
  });

  it('grows a few slots per add: a move of 1,024 slots takes 32 adds, and every key is found and removable at each step', () => {
    const t = new FingerprintTable(1024);
    const live = new Map<number, number>();
    let ref = 0;
    const add = () => {
      ref++;
      const h = pairHash('s', `k${ref}`);
      t.add(h, ref);
      live.set(ref, h);
    };
    while (!t.moving) add();
    // The add that started the move moved its first slots.
    let addsWhileMoving = 1;
    const removed: number[] = [];
    while (t.moving) {
      add();
      addsWhileMoving++;
      // Removals during the move, of keys copied already and of keys not yet copied.
      if (addsWhileMoving % 5 === 0) {
        for (const r of [ref - 1, Math.floor(ref / 3)]) {
          if (!live.has(r)) continue;
          expect(t.remove(live.get(r)!, r)).toBe(true);
          live.delete(r);
          removed.push(r);
        }
      }
      for (const [r, h] of live) expect(refsOf(t, h)).toContain(r);
    }
    expect(addsWhileMoving).toBe(1024 / 32);
    expect(t.capacity).toBe(2048);
    expect(t.size).toBe(live.size);
    for (const [r, h] of live) expect(refsOf(t, h)).toEqual([r]);
    // What was removed during the move stays removed after it.
    expect(removed.length).toBeGreaterThan(10);
    for (const r of removed) expect(refsOf(t, pairHash('s', `k${r}`))).not.toContain(r);
  });

  it('clear empties it and gives back the memory it grew to', () => {
    const t = new FingerprintTable(8);
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
