import { describe, expect, it } from 'vitest';
import type { LimitWindow } from './budget.js';
import { ROUNDS, bodyAt, generatePool } from './payloads.js';
import { type Tenant, TenantCursor, tenantBody } from './tenants.js';

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
