import { expect, it } from 'vitest';
import { MERGE_FLOOR, MERGE_LEAST, MERGE_MOST, MERGE_SIMILAR, type RunSize, runsToMerge } from './person-event-runs.js';

const runs = (...keys: number[]): RunSize[] => keys.map((k, i) => ({ run: i + 1, keys: k }));

it('merges MERGE_LEAST runs within MERGE_SIMILAR of the smallest, the small ones first, and none fewer', () => {
  const big = MERGE_FLOOR * 100;
  const alike = (n: number) => Array.from({ length: n }, (_, i) => big + i);
  expect(runsToMerge(runs(...alike(MERGE_LEAST - 1)))).toBeNull();
  // The smallest first: runs 2 to MERGE_LEAST, then run 1, the largest within MERGE_SIMILAR of them.
  expect(runsToMerge(runs(big * MERGE_SIMILAR, ...alike(MERGE_LEAST - 1)))).toEqual([...Array.from({ length: MERGE_LEAST - 1 }, (_, i) => i + 2), 1]);
  // Spread wider than MERGE_SIMILAR: no band of MERGE_LEAST.
  expect(runsToMerge(runs(big * MERGE_SIMILAR + 1, ...alike(MERGE_LEAST - 1)))).toBeNull();
  // Runs under MERGE_FLOOR are of one size, however small.
  expect(runsToMerge(runs(...Array.from({ length: MERGE_LEAST }, (_, i) => 1 + i * (MERGE_FLOOR / MERGE_LEAST)), big))).toHaveLength(MERGE_LEAST);
  expect(runsToMerge(runs(...alike(MERGE_MOST * 2)))).toHaveLength(MERGE_MOST);
});

it('keeps a project\'s runs logarithmic in its keys, however many steps write them', () => {
  let live: RunSize[] = [];
  let next = 1;
  let total = 0;
  let most = 0;
  // Fold steps of 1 to 16,384 keys (a pseudo-random walk), each followed by the merges called for.
  let x = 7;
  for (let step = 0; step < 5000; step++) {
    x = (x * 48_271) % 2_147_483_647;
    const keys = 1 + (x % 16_384);
    total += keys;
    live.push({ run: next++, keys });
    for (let pick = runsToMerge(live); pick !== null; pick = runsToMerge(live)) {
      const merged = live.filter((r) => pick!.includes(r.run)).reduce((n, r) => n + r.keys, 0);
      live = [...live.filter((r) => !pick!.includes(r.run)), { run: next++, keys: merged }];
    }
    // No band of MERGE_SIMILAR holds MERGE_LEAST runs once merged, so each MERGE_LEAST - 1 of them up, sizes grow MERGE_SIMILAR-fold.
    const bound = (MERGE_LEAST - 1) * (Math.log(Math.max(total, MERGE_FLOOR) / MERGE_FLOOR) / Math.log(MERGE_SIMILAR) + 1) + 1;
    expect(live.length).toBeLessThanOrEqual(bound);
    most = Math.max(most, live.length);
  }
  // Some 40 million keys in at most four dozen runs.
  expect(total).toBeGreaterThan(30_000_000);
  expect(most).toBeLessThanOrEqual(48);
});
