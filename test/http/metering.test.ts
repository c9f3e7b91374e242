import { afterEach, describe, expect, it } from 'vitest';
import { type Fixture, type FixtureOptions, makeFixture, send } from '../helpers/fixture.js';

let f: Fixture;
afterEach(async () => f?.close());
async function fixture(opts: FixtureOptions = {}) {
  f = await makeFixture(opts);
  return f;
}
const track = (n: number, prefix = 'e') => Array.from({ length: n }, (_, i) => ({ event: 'e', distinct_id: `u${i % 7}`, insert_id: `${prefix}${i}` }));
const month = '2026-11';

describe('metering', () => {
  it('counts stored track events once; repeats, identify, dry runs, drops and refusals never count', async () => {
    await fixture({ limits: { burst: 20 } });
    await send(f, { items: track(5) });
    await send(f, { items: track(5) }); // all repeats
    await send(f, { items: [{ type: 'identify', distinct_id: 'u1', properties: { a: 1 } }] });
    await send(f, { items: track(3, 'dry') }, { query: 'validate=true' });
    await send(f, { items: [{ event: 'b', distinct_id: 'u', properties: { $user_agent: 'Googlebot/2.1' } }] });
    await send(f, { items: [{ event: '', distinct_id: 'u' }] });
    expect((await send(f, { items: track(10, 'late') })).statusCode).toBe(429);
    expect(await f.collector.store.usage(f.projectId, month)).toBe(5);
    expect(await f.collector.store.listEvents(f.sourceId, 100)).toHaveLength(5);
  });

  it('counts by calendar month in UTC', async () => {
    await fixture();
    f.clock.ms = Date.UTC(2026, 10, 30, 23, 59, 59, 999);
    await send(f, { items: track(2, 'nov') });
    f.clock.advance(1);
    await send(f, { items: track(3, 'dec') });
    expect(await f.collector.store.usage(f.projectId, '2026-11')).toBe(2);
    expect(await f.collector.store.usage(f.projectId, '2026-12')).toBe(3);
  });
});

describe('plan limit', () => {
  it('takes items in order up to the limit, then drops track items with collection_paused; identify still applies', async () => {
    await fixture();
    await f.admin.updateProject(f.projectId, { monthlyEventLimit: 5 });
    expect((await send(f, { items: track(3, 'a') })).json()).toMatchObject({ accepted: 3, dropped: [] });
    const res = await send(f, { items: [
      ...track(2, 'b'),
      { type: 'identify', distinct_id: 'u1', properties: { still: 'applied' } },
      ...track(2, 'c'),
    ] });
    expect(res.statusCode).toBe(202);
    expect(res.json()).toMatchObject({
      accepted: 3,
      dropped: [{ index: 3, reason: 'collection_paused' }, { index: 4, reason: 'collection_paused' }],
    });
    expect(await f.collector.store.usage(f.projectId, month)).toBe(5);
    expect((await f.collector.store.findPerson(f.projectId, { distinctId: 'u1' }))?.traits).toEqual({ still: 'applied' });
    // A repeat of a stored insert_id is still answered as a duplicate, not paused.
    expect((await send(f, { items: track(1, 'a') })).json()).toMatchObject({ accepted: 1, duplicates: [0], dropped: [] });
    await f.admin.updateProject(f.projectId, { monthlyEventLimit: null });
    expect((await send(f, { items: track(2, 'd') })).json()).toMatchObject({ accepted: 2, dropped: [] });
  });

  it('never lets concurrent requests push the total past the limit', async () => {
    await fixture();
    await f.admin.updateProject(f.projectId, { monthlyEventLimit: 100 });
    const answers = await Promise.all(Array.from({ length: 30 }, (_, r) => send(f, { items: track(7, `r${r}_`) })));
    const accepted = answers.reduce((n, a) => n + a.json().accepted, 0);
    const paused = answers.reduce((n, a) => n + a.json().dropped.length, 0);
    expect(accepted).toBe(100);
    expect(paused).toBe(110);
    expect(await f.collector.store.usage(f.projectId, month)).toBe(100);
    expect(await f.collector.store.listEvents(f.sourceId, 1000)).toHaveLength(100);
  });

  it('the dry run shows collection_paused without storing or metering', async () => {
    await fixture();
    await f.admin.updateProject(f.projectId, { monthlyEventLimit: 1 });
    const res = await send(f, { items: track(2) }, { query: 'validate=true' });
    expect(res.json().items.map((i: { outcome: string; reason: string | null }) => [i.outcome, i.reason])).toEqual([
      ['accepted', null],
      ['dropped', 'collection_paused'],
    ]);
    expect(await f.collector.store.usage(f.projectId, month)).toBe(0);
  });
});

describe('limits over HTTP (injected clock)', () => {
  it('a request fits whole or is refused whole, and the window slides', async () => {
    await fixture({ limits: { burst: 10, sustained: 15 } });
    expect((await send(f, { items: track(6, 'a') })).statusCode).toBe(202);
    const refused = await send(f, { items: track(5, 'b') });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('10');
    expect(refused.headers.ratelimit).toBe('"burst";r=4;t=10, "sustained";r=9;t=60');
    expect((await send(f, { items: track(4, 'c') })).statusCode).toBe(202);
    f.clock.advance(9_999);
    expect((await send(f, { items: track(1, 'd') })).statusCode).toBe(429);
    f.clock.advance(1);
    // The first 6 have left the burst window; the sustained one still holds 10.
    const sustained = await send(f, { items: track(6, 'e') });
    expect(sustained.statusCode).toBe(429);
    expect(sustained.headers['retry-after']).toBe('60');
    expect((await send(f, { items: track(5, 'f') })).statusCode).toBe(202);
    expect(await f.collector.store.usage(f.projectId, month)).toBe(15);
  });

  it('dry runs count toward the limits', async () => {
    await fixture({ limits: { burst: 3 } });
    expect((await send(f, { items: track(3) }, { query: 'validate=true' })).statusCode).toBe(200);
    expect((await send(f, { items: track(1) })).statusCode).toBe(429);
  });

  it('limits set to 0 are off and leave their headers out', async () => {
    await fixture({ limits: { burst: 0, sustained: 0, keyRps: 0 } });
    const res = await send(f, { items: track(3) });
    expect(res.statusCode).toBe(202);
    expect(res.headers['ratelimit-policy']).toBeUndefined();
  });
});
