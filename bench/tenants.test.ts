import { describe, expect, it } from 'vitest';
import type { LimitWindow } from './budget.js';
import { RAISED_LIMITS, serverEnv } from './deploy.js';
import { ROUNDS, bodyAt, generatePool } from './payloads.js';
import { type Tenant, TenantCursor, defaultUsersPerTenant, heldShare, tenantBody } from './tenants.js';

const pool = generatePool({ name: 'big', prefix: 'b', seed: 1, bodies: 3, itemsPerBody: 20, gzip: false, now: Date.UTC(2026, 0, 1) });
const tenants: Tenant[] = Array.from({ length: 4 }, (_, i) => ({ key: `key${i}`, projectId: `prj${i}`, sourceId: `src${i}` }));
const ample: LimitWindow[] = [{ name: 'burst', limit: 1_000_000, windowMs: 10_000, unit: 'items' }];
const insertIds = (body: Buffer): string[] => (JSON.parse(body.toString('utf8')) as { items: { insert_id: string }[] }).items.map((i) => i.insert_id);

describe('TenantCursor', () => {
  it('goes round robin over the keys, each tenant sending the pool in order', () => {
    const c = new TenantCursor(pool, tenants, ample, () => 0);
    const got = Array.from({ length: 10 }, () => c.tryNext()!);
    expect(got.map((r) => r.key)).toEqual(['key0', 'key1', 'key2', 'key3', 'key0', 'key1', 'key2', 'key3', 'key0', 'key1']);
    // Tenant 0's requests: bodies 0, 1, 2 of the pool; its fourth is body 0 again, in the next round.
    expect([0, 1, 2, 3].map((n) => tenantBody(n, 3))).toEqual([
      { k: 0, round: 0 },
      { k: 1, round: 0 },
      { k: 2, round: 0 },
      { k: 0, round: 1 },
    ]);
    expect(got[4]!.body.equals(bodyAt(pool, 1, 0, ROUNDS[0]))).toBe(true);
    expect(c.skipped).toBe(0);
  });

  it('gives every tenant insert_ids of its own, the same items otherwise', () => {
    const c = new TenantCursor(pool, tenants, ample, () => 0);
    const first = tenants.map(() => c.tryNext()!);
    const ids = first.map((r) => insertIds(r.body));
    expect(new Set(ids.flat()).size).toBe(ids.flat().length);
    for (const [t, list] of ids.entries()) for (const id of list) expect(id[0]).toBe(ROUNDS[t]);
    const strip = (b: Buffer) => (JSON.parse(b.toString('utf8')) as { items: { insert_id: string }[] }).items.map(({ insert_id: _, ...rest }) => rest);
    expect(strip(first[1]!.body)).toEqual(strip(first[0]!.body));
  });

  it('skips a tenant without room and comes back to it once the window lets it', () => {
    let now = 0;
    const tight: LimitWindow[] = [{ name: 'burst', limit: 50, windowMs: 1000, unit: 'items' }];
    // 90% of 50 is 45: two requests of 20 items fit in a window, a third does not.
    const c = new TenantCursor(pool, tenants.slice(0, 2), tight, () => now);
    c.account(0, 20);
    const keys = [c.tryNext()!.key, c.tryNext()!.key, c.tryNext()!.key];
    expect(keys).toEqual(['key0', 'key1', 'key1']);
    expect(c.skipped).toBe(1);
    expect(c.tryNext()).toBeNull();
    now = 1000;
    expect(c.tryNext()!.key).toBe('key0');
  });

  it('waits when no tenant has room, for as long as the window says', async () => {
    let now = 0;
    const waits: number[] = [];
    const wait = async (ms: number) => {
      waits.push(ms);
      now += ms;
    };
    const c = new TenantCursor(pool, tenants.slice(0, 1), [{ name: 'per_key', limit: 2, windowMs: 30, unit: 'requests' }], () => now, wait);
    expect(c.tryNext()).not.toBeNull();
    now = 10;
    expect((await c.next()).key).toBe('key0');
    // 90% of 2 requests is 1: the second waits until the first, sent at 0, has left the 30 ms window.
    expect(waits).toEqual([20]);
    expect(c.waitedMs).toBe(20);
  });
});

describe('the users of a tenant', () => {
  const distinctIds = (body: Buffer): string[] => (JSON.parse(body.toString('utf8')) as { items: { distinct_id: string }[] }).items.map((i) => i.distinct_id);

  it('a tenant sends only its own few users, so a short phase does not measure every project meeting its users for the first time', () => {
    const c = new TenantCursor(pool, tenants, ample, () => 0, undefined, defaultUsersPerTenant(64));
    const all = new Set<string>();
    for (let n = 0; n < 3 * tenants.length; n++) for (const id of distinctIds(c.tryNext()!.body)) all.add(id);
    // 10,000 users shared out among 64 tenants: 157 each, numbered from 0.
    expect(defaultUsersPerTenant(64)).toBe(157);
    for (const id of all) expect(Number(id.slice('user_'.length))).toBeLessThan(157);
    // The pool itself has users past 157: without folding they would reach the server.
    const unfolded = new TenantCursor(pool, tenants, ample, () => 0);
    expect(distinctIds(unfolded.tryNext()!.body).some((id) => Number(id.slice('user_'.length)) >= 157)).toBe(true);
  });

  it('folding users changes the distinct_ids only, and keeps the body valid JSON of the same length', () => {
    const folded = new TenantCursor(pool, tenants, ample, () => 0, undefined, 100).tryNext()!.body;
    const plain = new TenantCursor(pool, tenants, ample, () => 0).tryNext()!.body;
    expect(folded.length).toBe(plain.length);
    const strip = (b: Buffer) => (JSON.parse(b.toString('utf8')) as { items: { distinct_id: string }[] }).items.map(({ distinct_id: _, ...rest }) => rest);
    expect(strip(folded)).toEqual(strip(plain));
    expect(distinctIds(folded)).toEqual(distinctIds(plain).map((id) => `user_${String(Number(id.slice(5)) % 100).padStart(5, '0')}`));
  });
});

describe('heldShare', () => {
  it('is the part of the connections\' time spent waiting for room', () => {
    expect(heldShare(0, 10, 8)).toBe(0);
    expect(heldShare(8_000, 10, 8)).toBeCloseTo(0.1);
    expect(heldShare(1e9, 10, 8)).toBe(1);
  });
});

describe('the pacing of the tenants workload', () => {
  /** Hands out `seconds` of requests due at `perSecond`, on a simulated clock that a wait moves on; the rate achieved in events/s. */
  async function drive(windows: LimitWindow[], perSecond: number, seconds: number) {
    const many: Tenant[] = Array.from({ length: 8 }, (_, i) => ({ key: `key${i}`, projectId: `prj${i}`, sourceId: `src${i}` }));
    let now = 0;
    const c = new TenantCursor({ ...pool, itemsPerBody: 500 }, many, windows, () => now, async (ms) => void (now += ms));
    const n = perSecond * seconds;
    for (let i = 0; i < n; i++) {
      now = Math.max(now, (i * 1000) / perSecond);
      await c.next();
    }
    return { eventsPerSec: (n * 500) / (now / 1000), waitedMs: c.waitedMs };
  }
  const defaults: LimitWindow[] = [
    { name: 'burst', limit: 50_000, windowMs: 10_000, unit: 'items' },
    { name: 'sustained', limit: 60_000, windowMs: 60_000, unit: 'items' },
    { name: 'per_key', limit: 100, windowMs: 1000, unit: 'requests' },
  ];
  // The windows a server with the throughput phase's raised limits names, and its per-key limit.
  const raised: LimitWindow[] = [
    { name: 'burst', limit: Number(RAISED_LIMITS.INLET_LIMIT_BURST), windowMs: 10_000, unit: 'items' },
    { name: 'sustained', limit: Number(RAISED_LIMITS.INLET_LIMIT_SUSTAINED), windowMs: 60_000, unit: 'items' },
    { name: 'per_key', limit: Number(RAISED_LIMITS.INLET_LIMIT_KEY_RPS), windowMs: 1000, unit: 'requests' },
  ];

  it('under the default windows the tenants cannot be sent faster than 90% of their sustained windows for long, a rate the row must not report as the server\'s', async () => {
    // 8 tenants against a server taking 15,000 events/s (30 batches of 500 a second), over two minutes.
    const capped = await drive(defaults, 30, 120);
    expect(capped.waitedMs).toBeGreaterThan(0);
    expect(capped.eventsPerSec).toBeLessThan(0.75 * 15_000);
    // Past the first minute the sustained window (90% of 60,000 per 60 s) holds each tenant: 8 x 54,000 / 60 = 7,200
    // (for 64 tenants, 57,600 events/s: half of big on SQLite).
    expect(capped.eventsPerSec).toBeGreaterThan(0.9 * 7_200);
  });

  it('under the raised windows of the throughput phase, the load generator never waits', async () => {
    const free = await drive(raised, 30, 120);
    expect(free.waitedMs).toBe(0);
    expect(free.eventsPerSec).toBeCloseTo(15_000, -2);
    // Ten times the most this machine stores (about 120,000 events/s, in batches of 500) stays under 90% of each.
    const perTenantItemsPerSec = (10 * 120_000) / 8;
    expect(0.9 * Number(RAISED_LIMITS.INLET_LIMIT_SUSTAINED)).toBeGreaterThan(perTenantItemsPerSec * 60);
    expect(0.9 * Number(RAISED_LIMITS.INLET_LIMIT_KEY_RPS)).toBeGreaterThan((10 * 120_000) / 500);
  });

  it('a raised deployment counts its limits (every one set, none off), where big\'s has them off', () => {
    const env = serverEnv({ limits: 'raised', databaseUrl: null });
    for (const [k, v] of Object.entries(RAISED_LIMITS)) expect(env[k]).toBe(v);
    expect(serverEnv({ limits: 'off', databaseUrl: null }).INLET_LIMIT_BURST).toBe('0');
  });
});
