import { describe, expect, it } from 'vitest';
import { LocalLimiter } from '../src/limiters/local/local-limiter.js';
import { DEFAULT_LIMITS, type LimitSettings, RateLimits } from '../src/domain/limits/policies.js';

const T = Date.UTC(2026, 0, 1);
const POLICY = '"burst";q=50000;w=10, "sustained";q=60000;w=60';

const limits = (settings: Partial<LimitSettings> = {}): RateLimits =>
  new RateLimits(new LocalLimiter(), { ...DEFAULT_LIMITS, ...settings });

describe('RateLimits: project items', () => {
  it('states the policies and what remains of each', async () => {
    const rl = limits();
    expect(await rl.checkItems('prj_1', 1_000, T)).toEqual({
      allowed: true,
      retryAfter: 0,
      headers: { 'RateLimit-Policy': POLICY, RateLimit: '"burst";r=49000;t=10, "sustained";r=59000;t=60' },
    });
  });

  it('gives t as the whole seconds, rounded up, until the oldest entry leaves', async () => {
    const rl = limits();
    await rl.checkItems('prj_1', 1_000, T);
    const v = await rl.checkItems('prj_1', 1_000, T + 5_500);
    expect(v.headers.RateLimit).toBe('"burst";r=48000;t=5, "sustained";r=58000;t=55');
  });

  it('refuses with Retry-After 10 when the burst window is full', async () => {
    const rl = limits();
    expect((await rl.checkItems('prj_1', 50_000, T)).allowed).toBe(true);
    expect(await rl.checkItems('prj_1', 1, T + 1)).toEqual({
      allowed: false,
      retryAfter: 10,
      headers: { 'RateLimit-Policy': POLICY, RateLimit: '"burst";r=0;t=10, "sustained";r=10000;t=60' },
    });
  });

  it('refuses with Retry-After 60 when the sustained window is full', async () => {
    const rl = limits();
    await rl.checkItems('prj_1', 50_000, T);
    expect(await rl.checkItems('prj_1', 10_001, T + 10_000)).toEqual({
      allowed: false,
      retryAfter: 60,
      headers: { 'RateLimit-Policy': POLICY, RateLimit: '"burst";r=50000;t=0, "sustained";r=10000;t=50' },
    });
    // The refused request added nothing: exactly what remains still fits.
    expect((await rl.checkItems('prj_1', 10_000, T + 10_000)).allowed).toBe(true);
  });

  it('waits for the longer window when both are full', async () => {
    expect((await limits().checkItems('prj_1', 60_001, T)).retryAfter).toBe(60);
  });

  it('counts projects apart', async () => {
    const rl = limits();
    await rl.checkItems('prj_1', 50_000, T);
    expect((await rl.checkItems('prj_2', 50_000, T)).allowed).toBe(true);
  });

  it('leaves a limit set to 0 out of the check and the headers', async () => {
    const v = await limits({ burst: 0 }).checkItems('prj_1', 55_000, T);
    expect(v).toEqual({
      allowed: true,
      retryAfter: 0,
      headers: { 'RateLimit-Policy': '"sustained";q=60000;w=60', RateLimit: '"sustained";r=5000;t=60' },
    });
    const s = await limits({ sustained: 0 }).checkItems('prj_1', 1, T);
    expect(s.headers).toEqual({ 'RateLimit-Policy': '"burst";q=50000;w=10', RateLimit: '"burst";r=49999;t=10' });
  });

  it('admits everything without headers when both project limits are 0', async () => {
    const rl = limits({ burst: 0, sustained: 0 });
    expect(await rl.checkItems('prj_1', 1_000_000, T)).toEqual({ allowed: true, retryAfter: 0, headers: {} });
  });
});

describe('RateLimits: per key', () => {
  it('admits 100 requests a second, refuses the 101st, and admits again a second later', async () => {
    const rl = limits();
    for (let i = 0; i < 100; i++) expect((await rl.checkKey('key_1', T + i)).allowed).toBe(true);
    expect(await rl.checkKey('key_1', T + 999)).toEqual({
      allowed: false,
      retryAfter: 10,
      headers: { 'RateLimit-Policy': '"per_key";q=100;w=1', RateLimit: '"per_key";r=0;t=1' },
    });
    expect((await rl.checkKey('key_2', T + 999)).allowed).toBe(true);
    // The request of T leaves at T+1,000; the refused one never counted.
    expect((await rl.checkKey('key_1', T + 1_000)).allowed).toBe(true);
    expect((await rl.checkKey('key_1', T + 1_000)).allowed).toBe(false);
    for (let i = 1; i < 100; i++) expect((await rl.checkKey('key_1', T + 1_000 + i)).allowed).toBe(true);
  });

  it('admits every request when the key limit is 0', async () => {
    const rl = limits({ keyRps: 0 });
    for (let i = 0; i < 500; i++) expect((await rl.checkKey('key_1', T)).allowed).toBe(true);
  });
});

describe('RateLimits: the import window', () => {
  it('counts apart from burst and sustained, and names only itself', async () => {
    const rl = limits({ import: 100 });
    expect(await rl.checkItems('prj_1', 60, T, 'import')).toEqual({
      allowed: true,
      retryAfter: 0,
      headers: { 'RateLimit-Policy': '"import";q=100;w=60', RateLimit: '"import";r=40;t=60' },
    });
    expect(await rl.checkItems('prj_1', 41, T + 1, 'import')).toMatchObject({ allowed: false, retryAfter: 60 });
    expect((await rl.checkItems('prj_1', 1, T + 2)).headers.RateLimit).toBe('"burst";r=49999;t=10, "sustained";r=59999;t=60');
    expect((await rl.checkItems('prj_1', 40, T + 60_000, 'import')).allowed).toBe(true);
  });
});
