import { describe, expect, it } from 'vitest';
import { MAX_RETRY_MS, retryDelay } from './backoff.js';

describe('retries', () => {
  it('double from a second up to five minutes, with a fifth of jitter below', () => {
    expect([1, 2, 3, 10].map((n) => retryDelay(n, null, () => 1))).toEqual([1000, 2000, 4000, 300_000]);
    expect(retryDelay(1, null, () => 0)).toBe(800);
    expect(retryDelay(100, null, () => 1)).toBe(MAX_RETRY_MS);
  });

  it("honour the receiver's Retry-After, up to five minutes", () => {
    expect(retryDelay(5, 0)).toBe(0);
    expect(retryDelay(1, 30_000)).toBe(30_000);
    expect(retryDelay(1, 3_600_000)).toBe(MAX_RETRY_MS);
  });
});
