import { describe, expect, it } from 'vitest';
import { DEFAULT_KEY_RPS, Pacer, parseFields } from './pacer.js';

describe('Pacer', () => {
  it('reads the RateLimit and RateLimit-Policy fields the server sends', () => {
    expect(parseFields('"burst";q=50000;w=10, "sustained";q=60000;w=60')).toEqual(
      new Map([
        ['burst', { q: 50000, w: 10 }],
        ['sustained', { q: 60000, w: 60 }],
      ]),
    );
    expect(parseFields('"burst";r=49997;t=10')).toEqual(new Map([['burst', { r: 49997, t: 10 }]]));
    expect(parseFields(null).size).toBe(0);
  });

  it('holds a batch the project window has no room for until the window says it has', () => {
    const p = new Pacer();
    p.reserve(500, 0);
    p.answered(500, { policy: '"burst";q=1500;w=10', state: '"burst";r=1000;t=10' }, 100);
    expect(p.reserve(500, 100)).toBe(0);
    expect(p.reserve(500, 100)).toBe(0);
    // 1,000 left less the two batches booked since: the third waits for the window's reset.
    expect(p.reserve(500, 100)).toBe(10_000);
  });

  it('starts no more requests a second than its share of the key limit, and learns the limit a 429 names', () => {
    const p = new Pacer();
    const share = Math.floor(DEFAULT_KEY_RPS * 0.8);
    for (let i = 0; i < share; i++) expect(p.reserve(1, 0)).toBe(0);
    expect(p.reserve(1, 0)).toBe(1000);
    const q = new Pacer();
    q.answered(0, { policy: '"per_key";q=10;w=1', state: '"per_key";r=0;t=1' }, 0);
    for (let i = 0; i < 8; i++) expect(q.reserve(1, 0)).toBe(0);
    expect(q.reserve(1, 0)).toBe(1000);
  });
});
