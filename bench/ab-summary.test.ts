import { describe, expect, it } from 'vitest';
import { type AbFigures, type AbPair, abTables, ratiosOf, spread, summarise } from './ab-summary.js';

const fig = (eventsPerSec: number, usPerEvent: number, p99Ms: number, requestUsPerEvent?: number): AbFigures => ({ eventsPerSec, usPerEvent, requestUsPerEvent, p99Ms, rateLimited: 0, failures: 0 });

describe('spread', () => {
  it('gives min, median and max, the median of an even count being the mean of the middle two', () => {
    expect(spread([3, 1, 2])).toEqual({ min: 1, median: 2, max: 3, n: 3 });
    expect(spread([4, 1, 3, 2])).toEqual({ min: 1, median: 2.5, max: 4, n: 4 });
    expect(spread([])).toBeNull();
    expect(spread([Number.NaN, 5])).toEqual({ min: 5, median: 5, max: 5, n: 1 });
  });
});

describe('the B/A summary', () => {
  const pairs: AbPair[] = [
    { round: 1, workload: 'big', a: fig(20_000, 40, 50, 20), b: fig(22_000, 36, 45, 19) },
    { round: 1, workload: 'small', a: fig(4000, 200, 10), b: fig(4000, 210, 12) },
    { round: 2, workload: 'big', a: fig(25_000, 38, 40, 20), b: fig(25_000, 38, 60, 22) },
    { round: 3, workload: 'big', a: fig(20_000, 40, 0), b: fig(30_000, 30, 30) },
  ];

  it('takes B over A per round, leaving out rounds where A is 0', () => {
    expect(ratiosOf(pairs.filter((p) => p.workload === 'big'), 'eventsPerSec')).toEqual([1.1, 1, 1.5]);
    expect(ratiosOf(pairs.filter((p) => p.workload === 'big'), 'p99Ms')).toEqual([0.9, 1.5]);
    // The request thread's CPU where both sides measured it: round 3 did not.
    expect(ratiosOf(pairs.filter((p) => p.workload === 'big'), 'requestUsPerEvent')).toEqual([0.95, 1.1]);
  });

  it('summarises each workload over its rounds, in the order first seen', () => {
    const s = summarise(pairs);
    expect(s.map((r) => r.workload)).toEqual(['big', 'small']);
    expect(s[0]!.eventsPerSec).toEqual({ min: 1, median: 1.1, max: 1.5, n: 3 });
    expect(s[0]!.usPerEvent!.median).toBeCloseTo(0.9);
    expect(s[1]!.eventsPerSec).toEqual({ min: 1, median: 1, max: 1, n: 1 });
  });

  it('prints a line per round and side pair, and flags a round with 429s or failures', () => {
    const dirty: AbPair = { round: 1, workload: 'tenants', a: { ...fig(10, 1, 1), rateLimited: 2 }, b: fig(10, 1, 1) };
    const text = abTables([...pairs, dirty]);
    expect(text).toContain('B/A events/s (min / median / max)');
    expect(text).toMatch(/^1\s+big\s+20,000\s+22,000\s+40\.0\s+36\.0\s+20\.0\s+19\.0\s+50\.0\s+45\.0\s+1\.100\s+0\.900\s+0\.950$/m);
    expect(text).toMatch(/^1\s+small\s+4,000\s+4,000\s+200\.0\s+210\.0\s+-\s+-\s+10\.0\s+12\.0\s+1\.000\s+1\.050\s+-$/m);
    expect(text).toMatch(/^big\s+1\.000 \/ 1\.100 \/ 1\.500\s+0\.750 \/ 0\.900 \/ 1\.000\s+0\.950 \/ 1\.025 \/ 1\.100/m);
    expect(text).toContain('429s or failed requests: A 2/0, B 0/0');
  });

  it('flags a tenants pair whose load generator waited for the limits, as it flags 429s', () => {
    const paced: AbPair = { round: 1, workload: 'tenants', a: { ...fig(10, 1, 1), heldShare: 0.4 }, b: { ...fig(10, 1, 1), heldShare: 0.002 } };
    expect(abTables([paced])).toContain('load generator waited for the limits: A 40%, B 0% of its time');
    const free: AbPair = { ...paced, a: { ...paced.a, heldShare: 0.005 } };
    expect(abTables([free])).not.toContain('waited');
  });
});
