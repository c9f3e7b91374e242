import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Fixture, makeFixture, send } from '../helpers/fixture.js';

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture();
});
afterEach(async () => f.close());

const CHROME = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36';

async function ok(items: unknown[]) {
  const res = await send(f, { items });
  expect(res.statusCode, res.body).toBe(202);
  expect(res.json().errors).toEqual([]);
  return res.json();
}

const person = (lookup: { distinctId: string } | { personId: string }) => f.collector.store.findPerson(f.projectId, lookup);

describe('resolution', () => {
  it('a distinct_id alone makes one server person, found again on later events', async () => {
    await ok([{ event: 'a', distinct_id: 'cust_1' }, { event: 'b', distinct_id: 'cust_1' }]);
    await ok([{ event: 'c', distinct_id: 'cust_1' }]);
    const events = await f.collector.store.listEvents(f.sourceId, 10);
    expect(new Set(events.map((e) => e.personId)).size).toBe(1);
    const p = await person({ distinctId: 'cust_1' });
    expect(p?.id).toBe(events[0]!.personId);
    expect(p?.id).toMatch(/^per_/);
    expect(p?.distinctIds).toEqual(['cust_1']);
  });

  it('anonymous_id puts the event on that browser person and links nothing', async () => {
    await ok([{ event: 'viewed', anonymous_id: 'per_browser1', distinct_id: 'cust_2' }]);
    const [e] = await f.collector.store.listEvents(f.sourceId, 1);
    expect(e!.personId).toBe('per_browser1');
    expect(e!.distinctId).toBe('cust_2');
    expect(await person({ distinctId: 'cust_2' })).toBeNull();
    expect(await person({ personId: 'per_browser1' })).toMatchObject({ id: 'per_browser1', distinctIds: [] });
  });

  it('identify with anonymous_id links the distinct_id to the browser person', async () => {
    await ok([{ type: 'identify', distinct_id: 'cust_3', anonymous_id: 'per_b3', properties: { plan: 'pro' } }]);
    await ok([{ event: 'renewed', distinct_id: 'cust_3' }]);
    const [e] = await f.collector.store.listEvents(f.sourceId, 1);
    expect(e!.personId).toBe('per_b3');
    expect(await person({ distinctId: 'cust_3' })).toMatchObject({ id: 'per_b3', distinctIds: ['cust_3'], traits: { plan: 'pro' } });
  });

  it('every source of a project sees the same people', async () => {
    await ok([{ event: 'a', distinct_id: 'shared' }]);
    const other = await f.admin.createSource({ projectId: f.projectId, name: 'Exports' });
    const key = await f.admin.createKey(other.id);
    expect((await send({ ...f, key: key.key }, { items: [{ event: 'b', distinct_id: 'shared' }] })).statusCode).toBe(202);
    const [a] = await f.collector.store.listEvents(f.sourceId, 1);
    const [b] = await f.collector.store.listEvents(other.id, 1);
    expect(a!.personId).toBe(b!.personId);
  });

  it('many concurrent requests with the same new distinct_id make one person', async () => {
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) => send(f, { items: [{ event: 'race', distinct_id: 'newcomer', insert_id: `r${i}` }] })),
    );
    expect(results.every((r) => r.statusCode === 202)).toBe(true);
    const events = await f.collector.store.listEvents(f.sourceId, 100);
    expect(events).toHaveLength(40);
    expect(new Set(events.map((e) => e.personId)).size).toBe(1);
  });
});

describe('browser identify and merge', () => {
  it('merges a server person into the browser person: ids, traits and past events', async () => {
    await ok([
      { event: 'invoice_paid', distinct_id: 'cust_m' },
      { type: 'identify', distinct_id: 'cust_m', properties: { plan: 'pro', seats: 3 } },
    ]);
    const server = await person({ distinctId: 'cust_m' });
    await f.collector.transaction(async () => undefined);
    const merged = await f.admin.browserIdentify(f.projectId, 'per_web', 'cust_m');
    expect(merged).toMatchObject({ id: 'per_web', distinctIds: ['cust_m'], traits: { plan: 'pro', seats: 3 } });
    const [e] = await f.collector.store.listEvents(f.sourceId, 1);
    expect(e!.personId).toBe('per_web');
    expect((await person({ personId: server!.id }))?.id).toBe('per_web');
    await ok([{ event: 'after', distinct_id: 'cust_m' }]);
    expect((await f.collector.store.listEvents(f.sourceId, 1))[0]!.personId).toBe('per_web');
  });

  it('merging twice, or a person into itself, changes nothing', async () => {
    await ok([{ event: 'a', distinct_id: 'twice' }]);
    const first = await f.admin.browserIdentify(f.projectId, 'per_w2', 'twice');
    const second = await f.admin.browserIdentify(f.projectId, 'per_w2', 'twice');
    expect(second).toEqual(first);
    const self = await f.admin.browserIdentify(f.projectId, 'per_w2', 'twice');
    expect(self).toEqual(first);
  });

  it('browser traits and server traits merge newest per key', async () => {
    const t = f.clock.ms;
    await ok([{ type: 'identify', distinct_id: 'mix', anonymous_id: 'per_mix', timestamp: t - 5000, properties: { a: 'browser-old', b: 'browser-new' } }]);
    await ok([{ type: 'identify', distinct_id: 'mix_server', timestamp: t - 1000, properties: { a: 'server-new' } }]);
    await ok([{ type: 'identify', distinct_id: 'mix_server', timestamp: t - 9000, properties: { b: 'server-old' } }]);
    const p = await f.admin.browserIdentify(f.projectId, 'per_mix', 'mix_server');
    expect(p.traits).toEqual({ a: 'server-new', b: 'browser-new' });
    expect(p.distinctIds).toEqual(['mix', 'mix_server']);
  });
});

describe('traits', () => {
  it('newest item timestamp wins per key; a late identify never overwrites a newer value', async () => {
    const t = f.clock.ms;
    await ok([{ type: 'identify', distinct_id: 'tr', timestamp: t - 1000, properties: { plan: 'pro', email: 'new@x.example' } }]);
    await ok([{ type: 'identify', distinct_id: 'tr', timestamp: t - 60_000, properties: { plan: 'free', company: 'Acme' } }]);
    expect((await person({ distinctId: 'tr' }))?.traits).toEqual({ plan: 'pro', email: 'new@x.example', company: 'Acme' });
  });

  it('on a tie the later arrival wins, within a batch and across batches', async () => {
    const t = f.clock.ms - 1000;
    await ok([
      { type: 'identify', distinct_id: 'tie', timestamp: t, properties: { v: 1 } },
      { type: 'identify', distinct_id: 'tie', timestamp: t, properties: { v: 2 } },
    ]);
    expect((await person({ distinctId: 'tie' }))?.traits).toEqual({ v: 2 });
    await ok([{ type: 'identify', distinct_id: 'tie', timestamp: t, properties: { v: 3 } }]);
    expect((await person({ distinctId: 'tie' }))?.traits).toEqual({ v: 3 });
  });

  it('identify items are free: not metered, not in the events list', async () => {
    await ok([{ type: 'identify', distinct_id: 'free', properties: { a: 1 } }]);
    expect(await f.collector.store.listEvents(f.sourceId, 10)).toEqual([]);
    expect(await f.collector.store.usage(f.projectId, '2026-11')).toBe(0);
  });
});

describe('sessions and enrichment', () => {
  it('session_id joins the browser session; without it the event is the server session', async () => {
    await ok([{ event: 'a', distinct_id: 's', session_id: 'ses_abc' }, { event: 'b', distinct_id: 's', timestamp: f.clock.ms - 1 }]);
    const [a, b] = await f.collector.store.listEvents(f.sourceId, 10);
    expect(a).toMatchObject({ event: 'a', sessionId: 'ses_abc' });
    expect(b).toMatchObject({ event: 'b', sessionId: null });
  });

  it('$user_agent is parsed, stored as enrichment, and never stored raw; $source_id is set', async () => {
    await ok([{ event: 'ua', distinct_id: 'u', properties: { $user_agent: CHROME, $source_id: 'spoofed', plan: 'x' } }]);
    const [e] = await f.collector.store.listEvents(f.sourceId, 1);
    expect(e!.properties).toEqual({
      plan: 'x', $browser: 'Chrome', $browser_version: '124.0.0.0', $os: 'Mac OS', $os_version: '10.15.7',
      $device_type: 'desktop', $source_id: f.sourceId,
    });
    expect(JSON.stringify(e)).not.toContain('Mozilla');
  });

  it('a known bot is dropped with bot_filtered when the source filters bots, kept when it does not', async () => {
    const bot = { event: 'crawl', distinct_id: 'u', properties: { $user_agent: 'Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)' } };
    expect((await send(f, { items: [bot] })).json()).toMatchObject({ accepted: 0, dropped: [{ index: 0, reason: 'bot_filtered' }] });
    expect(await f.collector.store.usage(f.projectId, '2026-11')).toBe(0);
    await f.admin.updateSource(f.sourceId, { filterBots: false });
    expect((await send(f, { items: [bot] })).json()).toMatchObject({ accepted: 1, dropped: [] });
    const [e] = await f.collector.store.listEvents(f.sourceId, 1);
    expect(e!.properties.$device_type).toBe('desktop');
  });

  it('a bot user agent on an identify is not dropped', async () => {
    await ok([{ type: 'identify', distinct_id: 'u', properties: { $user_agent: 'Googlebot/2.1', a: 1 } }]);
    expect((await person({ distinctId: 'u' }))?.traits).toEqual({ a: 1 });
  });

  it('$ip is kept only when the source records IPs', async () => {
    await ok([{ event: 'no_ip', distinct_id: 'u', properties: { $ip: '203.0.113.7' } }]);
    expect((await f.collector.store.listEvents(f.sourceId, 1))[0]!.properties.$ip).toBeUndefined();
    await f.admin.updateSource(f.sourceId, { recordIp: true });
    await ok([{ event: 'ip', distinct_id: 'u', properties: { $ip: '203.0.113.7' }, timestamp: f.clock.ms + 1 }]);
    expect((await f.collector.store.listEvents(f.sourceId, 1))[0]!.properties.$ip).toBe('203.0.113.7');
  });
});

describe('dry run', () => {
  it('shows the person it would resolve to, whether new, and creates no one', async () => {
    await ok([{ event: 'a', distinct_id: 'known' }]);
    const known = await person({ distinctId: 'known' });
    const res = await send(f, { items: [
      { event: 'x', distinct_id: 'known' },
      { event: 'y', distinct_id: 'stranger' },
      { event: 'z', anonymous_id: 'per_unseen' },
    ] }, { query: 'validate=true' });
    const items = res.json().items;
    expect(items[0].person).toEqual({ id: known!.id, new: false });
    expect(items[1].person).toEqual({ id: expect.stringMatching(/^per_/), new: true });
    expect(items[2].person).toEqual({ id: 'per_unseen', new: true });
    expect(items[0].session).toEqual({ id: null, server_session: true });
    expect(await person({ distinctId: 'stranger' })).toBeNull();
    expect(await person({ personId: 'per_unseen' })).toBeNull();
    expect(await f.collector.store.listEvents(f.sourceId, 10)).toHaveLength(1);
  });
});
