import { describe, expect, it } from 'vitest';
import { secondsLeft } from './progress.js';

describe('secondsLeft', () => {
  it('with the whole file read but the window full, the time left is what the server states, not "0s" (the bar of the report)', () => {
    // 60,000 lines of 100 bytes, all read; 59,500 done; the sustained window full for 55 s more.
    const left = secondsLeft(6_000_000, 0, {
      acknowledged: 5_950_000,
      read: 6_000_000,
      linesRead: 60_000,
      settled: 59_500,
      limits: [{ name: 'sustained', quota: 60_000, windowMs: 60_000, room: 0, resetMs: 55_000 }],
    }, 5);
    expect(left).toBeGreaterThanOrEqual(55);
  });

  it('past the room a window states, items go at its quota per window length', () => {
    // 100,000 lines, 10,000 done in 1 s; 50,000 more fit now, the other 40,000 at 1,000 a second.
    const left = secondsLeft(10_000_000, 0, {
      acknowledged: 1_000_000,
      read: 1_000_000,
      linesRead: 10_000,
      settled: 10_000,
      limits: [{ name: 'sustained', quota: 60_000, windowMs: 60_000, room: 50_000, resetMs: 59_000 }],
    }, 1);
    expect(left).toBe(40);
  });

  it('with no limits stated, the pace the server has answered at', () => {
    expect(secondsLeft(2000, 0, { acknowledged: 1000, read: 1000, linesRead: 10, settled: 10, limits: [] }, 2)).toBe(2);
  });
});
