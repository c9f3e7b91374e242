/**
 * Which of a project's runs of person_events to merge (sql/person-events.ts):
 * size-tiered, as a log-structured merge does. Runs of similar size (within
 * MERGE_SIMILAR of the smallest) are merged once MERGE_LEAST of them exist,
 * MERGE_MOST at once; runs under MERGE_FLOOR keys count as that size, so the
 * small runs of a fold that keeps up (a pass a second) merge among
 * themselves. No size band then holds MERGE_LEAST runs, so a project has at
 * most about (MERGE_LEAST - 1) × (log8(its keys / MERGE_FLOOR) + 1) runs,
 * each probed by a read (an index seek each), and a key is rewritten fewer
 * times the more runs a merge takes. Merging 4 runs within a factor of 4
 * rewrote each key 3.1 times by a million keys (7.2 µs of CPU per event
 * folded on SQLite, against 4.2 with 8); merging 16 instead of 8, the fold
 * after 30 s of `big` took 4.6–4.7 µs an event against 8.3–9.4
 * (bench/after-load.ts), for about twice as many runs to read.
 */
export const MERGE_LEAST = 16;
export const MERGE_MOST = 32;
export const MERGE_SIMILAR = 8;
export const MERGE_FLOOR = 4096;

export interface RunSize {
  run: number;
  keys: number;
}

/** The runs to merge now, smallest first; null when no size band holds MERGE_LEAST of them. */
export function runsToMerge(runs: readonly RunSize[]): number[] | null {
  const sorted = [...runs].sort((a, b) => a.keys - b.keys || a.run - b.run);
  const size = (r: RunSize) => Math.max(MERGE_FLOOR, r.keys);
  for (let i = 0; i + MERGE_LEAST <= sorted.length; i++) {
    let j = i;
    while (j + 1 < sorted.length && j + 1 - i < MERGE_MOST && size(sorted[j + 1]!) <= MERGE_SIMILAR * size(sorted[i]!)) j++;
    if (j - i + 1 >= MERGE_LEAST) return sorted.slice(i, j + 1).map((r) => r.run);
  }
  return null;
}
