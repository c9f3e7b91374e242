import { describe, expect, it } from 'vitest';
import { type LimitWindow, WindowBudget, parseRateLimitPolicy } from './budget.js';

describe('parseRateLimitPolicy', () => {
  it('reads the project windows a 2xx answer names', () => {
    expect(parseRateLimitPolicy('"burst";q=50000;w=10, "sustained";q=60000;w=60')).toEqual([
      { name: 'burst', limit: 50_000, windowMs: 10_000, unit: 'items' },
      { name: 'sustained', limit: 60_000, windowMs: 60_000, unit: 'items' },
    ]);
  });

  it('gives no window without the header (limits off), and skips parts it cannot read', () => {
    expect(parseRateLimitPolicy(null)).toEqual([]);
    expect(parseRateLimitPolicy('')).toEqual([]);
    expect(parseRateLimitPolicy('"burst";q=10, "sustained";q=60000;w=60')).toEqual([{ name: 'sustained', limit: 60_000, windowMs: 60_000, unit: 'items' }]);
  });
});

describe('WindowBudget', () => {
  const burst: LimitWindow = { name: 'burst', limit: 1000, windowMs: 10_000, unit: 'items' };
  const perKey: LimitWindow = { name: 'per_key', limit: 10, windowMs: 1000, unit: 'requests' };

  it('lets requests through up to 90% of a window, then not until the oldest leaves it', () => {
    const b = new WindowBudget(1, [burst]);
    b.take(0, 300, 0);
    b.take(0, 300, 1000);
    // 600 of the 900 allowed are used: 300 more fit, 301 do not.
    expect(b.fits(0, 300, 2000)).toBe(true);
    expect(b.fits(0, 301, 2000)).toBe(false);
    // The first 300 leave the window at 10,000 ms exactly.
    expect(b.roomAt(0, 301, 2000)).toBe(10_000);
    expect(b.fits(0, 301, 9999)).toBe(false);
    expect(b.fits(0, 301, 10_000)).toBe(true);
  });

  it('waits for as many old requests as must leave, and for the slowest window', () => {
    const b = new WindowBudget(1, [burst, perKey]);
    for (let t = 0; t < 9; t++) b.take(0, 100, t * 100);
    // 900 items in: a request of 200 needs the first two (at 0 and 100 ms) gone.
    expect(b.roomAt(0, 200, 900)).toBe(10_100);
    // 9 requests in the last second: the per-key window (9 allowed) waits for the first to leave.
    expect(b.roomAt(0, 0, 900)).toBe(1000);
  });

  it('keeps tenants apart', () => {
    const b = new WindowBudget(2, [burst]);
    b.take(0, 900, 0);
    expect(b.fits(0, 1, 0)).toBe(false);
    expect(b.fits(1, 900, 0)).toBe(true);
  });

  it('says never for a request larger than 90% of a limit', () => {
    expect(new WindowBudget(1, [burst]).roomAt(0, 901, 0)).toBe(Number.POSITIVE_INFINITY);
  });
});
