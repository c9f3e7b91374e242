import { describe, expect, it } from 'vitest';
import { FIRST_RETRY_MS, MAX_RETRY_MS, retryDelay } from './backoff.js';

describe('retries', () => {
  it('double from a second up to five minutes, with a fifth of jitter below (never under a second)', () => {
    expect([1, 2, 3, 10].map((n) => retryDelay(n, null, () => 1))).toEqual([1000, 2000, 4000, 300_000]);
    expect(retryDelay(1, null, () => 0)).toBe(FIRST_RETRY_MS);
    expect(retryDelay(2, null, () => 0)).toBe(1600);
    expect(retryDelay(100, null, () => 1)).toBe(MAX_RETRY_MS);
  });

  it("honour the receiver's Retry-After, up to five minutes", () => {
    expect(retryDelay(1, 30_000)).toBe(30_000);
    expect(retryDelay(1, 3_600_000)).toBe(MAX_RETRY_MS);
  });

  it('a receiver answering Retry-After: 0 is not tried again at once: a second at least', () => {
    expect(retryDelay(5, 0)).toBe(FIRST_RETRY_MS);
    expect(retryDelay(1, 250)).toBe(FIRST_RETRY_MS);
    expect(retryDelay(1, -5)).toBe(FIRST_RETRY_MS);
  });
});
