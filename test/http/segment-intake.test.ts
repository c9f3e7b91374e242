import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LiveWindow } from '../../src/domain/live-window.js';
import { insertIdFor } from '../../src/intakes/segment/segment-map.js';
import { type Fixture, makeFixture } from '../helpers/fixture.js';

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture({ recordIp: true });
});
afterEach(async () => f.close());

const basic = (key: string) => `Basic ${Buffer.from(`${key}:`).toString('base64')}`;

function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return f.app.inject({
    method: 'POST',
    url: path,
    headers: { authorization: basic(f.key), 'content-type': 'application/json', ...headers },
    payload: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
  });
}

const events = () => f.collector.store.listEvents(f.sourceId, 100);
const iso = (ms: number) => new Date(ms).toISOString();

describe('keys', () => {
  it('takes the key as the Basic user name, as Bearer, or as writeKey in the body', async () => {
    const track = (messageId: string) => ({ event: 'paid', userId: 'u1', messageId });
    expect((await post('/v1/track', track('m1'))).statusCode).toBe(200);
    expect((await post('/v1/track', track('m2'), { authorization: `Bearer ${f.key}` })).statusCode).toBe(200);
    const noHeader = await f.app.inject({
      method: 'POST',
      url: '/v1/batch',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ writeKey: f.key, batch: [{ type: 'track', ...track('m3') }] }),
    });
    expect(noHeader.statusCode, noHeader.body).toBe(200);
    expect((await events()).map((e) => e.insertId).sort()).toEqual(['m1', 'm2', 'm3']);
  });

  it('no key anywhere is 401 missing_key with a message naming every way to send it', async () => {
    const res = await f.app.inject({ method: 'POST', url: '/v1/track', headers: { 'content-type': 'application/json' }, payload: '{"event":"a","userId":"u"}' });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('missing_key');
    expect(res.json().error.message).toMatch(/Basic/);
  });

  it('a body that is not JSON and no key is missing_key first, as the order of checks puts the key before the body', async () => {
    const res = await f.app.inject({ method: 'POST', url: '/v1/track', headers: { 'content-type': 'application/json' }, payload: '{nope' });
    expect(res.json().error.code).toBe('missing_key');
  });

  it('an unknown key is 401 invalid_key, and a browser is refused before the key', async () => {
    expect((await post('/v1/track', {}, { authorization: basic('srv_live_00000000000000000000000000000000') })).json().error.code).toBe('invalid_key');
    const browser = await post('/v1/track', {}, { authorization: basic('nope'), origin: 'https://example.com' });
    expect(browser.statusCode).toBe(403);
    expect(browser.json().error.code).toBe('browser_not_allowed');
  });

  it('a project without the API enabled is 404 not_found', async () => {
    await f.admin.updateProject(f.projectId, { apiEnabled: false });
    expect((await post('/v1/track', { event: 'a', userId: 'u' })).statusCode).toBe(404);
  });
});

describe('request checks', () => {
  it('answers unknown /v1 paths 404 and other methods 405, in the envelope', async () => {
    const unknown = await post('/v1/nothing', {});
    expect(unknown.statusCode).toBe(404);
    expect(unknown.headers['request-id']).toBe(unknown.json().error.request_id);
    const get = await f.app.inject({ method: 'GET', url: '/v1/batch' });
    expect(get.statusCode).toBe(405);
    expect(get.headers.allow).toBe('POST');
  });

  it('a tracker host gets 404 here too', async () => {
    await f.close();
    f = await makeFixture({ trackerHosts: ['t.example.com'] });
    expect((await post('/v1/track', { event: 'a', userId: 'u' }, { host: 't.example.com' })).statusCode).toBe(404);
  });

  it('refuses bad JSON, a wrong shape, an empty and an oversized batch with the usual codes', async () => {
    expect((await post('/v1/batch', '{nope')).json().error.code).toBe('invalid_json');
    expect((await post('/v1/batch', { items: [] })).json().error.code).toBe('invalid_body');
    expect((await post('/v1/batch', { batch: [] })).json().error.code).toBe('batch_empty');
    const many = Array.from({ length: 501 }, (_, i) => ({ type: 'track', event: 'e', userId: `u${i}` }));
    expect((await post('/v1/batch', { batch: many })).json().error.code).toBe('batch_too_many_items');
    const big = await post('/v1/track', { event: 'a', userId: 'u', properties: { x: 'y'.repeat(1_100_000) } });
    expect(big.statusCode).toBe(413);
  });

  it('takes gzip bodies, with or without a Content-Type', async () => {
    const body = gzipSync(JSON.stringify({ batch: [{ type: 'track', event: 'zipped', userId: 'u1', messageId: 'z1' }] }));
    const res = await f.app.inject({ method: 'POST', url: '/v1/batch', headers: { authorization: basic(f.key), 'content-encoding': 'gzip' }, payload: body });
    expect(res.statusCode, res.body).toBe(200);
    expect((await events())[0]!.event).toBe('zipped');
  });

  it('the project limits answer 429 with Retry-After, so the SDKs retry the same messageIds', async () => {
    await f.close();
    f = await makeFixture({ limits: { burst: 2 } });
    const batch = { batch: [1, 2, 3].map((i) => ({ type: 'track', event: 'e', userId: 'u', messageId: `r${i}` })) };
    const res = await post('/v1/batch', batch);
    expect(res.statusCode).toBe(429);
    expect(res.headers['retry-after']).toBe('10');
    expect(res.json().error.code).toBe('rate_limited');
  });
});

describe('mapping', () => {
  it('maps track: userId, messageId, properties and context', async () => {
    const res = await post('/v1/track', {
      event: 'Order Completed',
      userId: 'cust_9',
      anonymousId: 'anon-123',
      messageId: 'msg-1',
      properties: { total: 30 },
      context: { ip: '203.0.113.9', userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36', page: { url: 'https://shop.example/cart' } },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ accepted: 1, errors: [], dropped: [] });
    const [e] = await events();
    expect(e).toMatchObject({ event: 'Order Completed', distinctId: 'cust_9', anonymousId: null, insertId: 'msg-1' });
    expect(e!.properties).toMatchObject({ total: 30, $ip: '203.0.113.9', $current_url: 'https://shop.example/cart', $browser: 'Chrome' });
  });

  it('anonymousId is the anonymous_id when it is a per_ key, else the distinct_id when there is no userId', async () => {
    await post('/v1/batch', {
      batch: [
        { type: 'track', event: 'a', anonymousId: 'per_browser7', messageId: 'a1' },
        { type: 'track', event: 'b', anonymousId: 'anon-42', messageId: 'a2' },
      ],
    });
    const byId = new Map((await events()).map((e) => [e.insertId, e]));
    expect(byId.get('a1')).toMatchObject({ anonymousId: 'per_browser7', personId: 'per_browser7' });
    expect(byId.get('a2')).toMatchObject({ distinctId: 'anon-42', anonymousId: null });
  });

  it('identify traits become the person\'s traits', async () => {
    const res = await post('/v1/identify', { userId: 'cust_5', traits: { plan: 'team', email: 'a@example.com' }, messageId: 'i1' });
    expect(res.json().accepted).toBe(1);
    expect(await f.collector.store.findPerson(f.projectId, { distinctId: 'cust_5' })).toMatchObject({ traits: { plan: 'team', email: 'a@example.com' } });
  });

  it('page is $pageview and screen is $screen, with their name; a track named $pageview stays refused', async () => {
    const res = await post('/v1/batch', {
      batch: [
        { type: 'page', name: 'Pricing', userId: 'u1', properties: { path: '/pricing' }, messageId: 'p1' },
        { type: 'screen', name: 'Home', userId: 'u1', messageId: 's1' },
        { type: 'track', event: '$pageview', userId: 'u1', messageId: 't1' },
      ],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().errors).toEqual([expect.objectContaining({ index: 2, code: 'reserved_event_name' })]);
    const byId = new Map((await events()).map((e) => [e.insertId, e]));
    expect(byId.get('p1')).toMatchObject({ event: '$pageview', properties: { path: '/pricing', name: 'Pricing' } });
    expect(byId.get('s1')).toMatchObject({ event: '$screen', properties: { name: 'Home' } });
  });

  it('group sets a group\'s traits and makes the sender a member; alias links previousId to userId\'s person', async () => {
    const res = await post('/v1/batch', {
      batch: [
        { type: 'identify', userId: 'u1', traits: { plan: 'team' }, messageId: 'g0' },
        { type: 'group', groupId: 'acme', userId: 'u1', traits: { name: 'Acme', seats: 12 }, messageId: 'g1' },
        { type: 'group', groupId: 'blue', userId: 'u1', traits: { group_type: 'team' }, messageId: 'g2' },
        { type: 'alias', previousId: 'anon-old', userId: 'u1', messageId: 'a1' },
      ],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ accepted: 4, errors: [] });
    const person = await f.collector.store.findPerson(f.projectId, { distinctId: 'u1' });
    expect(person!.distinctIds.sort()).toEqual(['anon-old', 'u1']);
    expect(person!.groups).toEqual([{ groupType: 'company', groupKey: 'acme' }, { groupType: 'team', groupKey: 'blue' }]);
    expect(await f.collector.store.findGroup(f.projectId, 'company', 'acme')).toMatchObject({ traits: { name: 'Acme', seats: 12 }, members: [person!.id] });
    // The single-message paths too; a resent messageId is a duplicate.
    expect((await post('/v1/alias', { previousId: 'anon-old', userId: 'u1', messageId: 'a1' })).json()).toMatchObject({ accepted: 1, duplicates: [0] });
    expect((await post('/v1/group', { groupId: 'acme', userId: 'u2', messageId: 'g3' })).json()).toMatchObject({ accepted: 1, errors: [] });
  });

  it('corrects the timestamp by the sender\'s clock skew, receivedAt - sentAt', async () => {
    const now = f.clock.now();
    // The sender's clock runs 1 hour behind: it stamped the event 5 s before sending.
    const behind = now - 3_600_000;
    await post('/v1/batch', { sentAt: iso(behind), batch: [{ type: 'track', event: 'late', userId: 'u', timestamp: iso(behind - 5000), messageId: 'k1' }] });
    await post('/v1/track', { event: 'own', userId: 'u', timestamp: iso(now - 2000), sentAt: iso(now), messageId: 'k2' });
    await post('/v1/track', { event: 'rudder', userId: 'u', originalTimestamp: iso(behind - 1000), sentAt: iso(behind), messageId: 'k3' });
    const byId = new Map((await events()).map((e) => [e.insertId, e]));
    expect(byId.get('k1')!.timestamp).toBe(now - 5000);
    expect(byId.get('k2')!.timestamp).toBe(now - 2000);
    expect(byId.get('k3')!.timestamp).toBe(now - 1000);
  });

  it('a messageId that breaks the insert_id rule becomes a stable hash, so a resend is still a duplicate', async () => {
    const messageId = 'ajs-next-1700000000000-6d7c2b1e.with:colons';
    const first = await post('/v1/track', { event: 'a', userId: 'u', messageId });
    const again = await post('/v1/track', { event: 'a', userId: 'u', messageId });
    expect(first.json()).toMatchObject({ accepted: 1, duplicates: [] });
    expect(again.json()).toMatchObject({ accepted: 1, duplicates: [0] });
    const [e] = await events();
    expect(e!.insertId).toBe(insertIdFor(messageId));
    expect(e!.insertId).toMatch(/^[A-Za-z0-9_-]{1,80}$/);
  });

  it('an invalid message is refused on its own with the usual item codes', async () => {
    const res = await post('/v1/batch', { batch: [{ type: 'track', userId: 'u', messageId: 'x1' }, { type: 'track', event: 'ok', userId: 'u', messageId: 'x2' }, 'nope'] });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ accepted: 1, errors: [{ index: 0, code: 'missing_event_name' }, { index: 2, code: 'invalid_item' }] });
  });
});

describe('the console live view', () => {
  it('shows a Segment-spec request as the batch API does: its status, and each item with its outcome', async () => {
    const live = new LiveWindow();
    const g = await makeFixture({ live });
    // Requests are recorded only for a source someone watches.
    const stop = live.subscribe(g.sourceId, () => undefined);
    try {
      const res = await g.app.inject({
        method: 'POST',
        url: '/v1/batch',
        headers: { authorization: basic(g.key), 'content-type': 'application/json' },
        payload: JSON.stringify({ batch: [{ type: 'track', userId: 'u', messageId: 'x1' }, { type: 'track', event: 'ok', userId: 'u', messageId: 'x2' }] }),
      });
      expect(res.statusCode).toBe(200);
      const [request, ...older] = live.recent(g.sourceId);
      expect(older).toEqual([]);
      expect(request).toMatchObject({ requestId: res.headers['request-id'], status: 200 });
      const items = request!.items.map((i) => [i.index, i.outcome, i.code, i.event]).sort((a, b) => Number(a[0]) - Number(b[0]));
      expect(items).toEqual([
        [0, 'refused', 'missing_event_name', null],
        [1, 'accepted', null, 'ok'],
      ]);
    } finally {
      stop();
      await g.close();
    }
  });
});

describe('reference page', () => {
  it('documents every Segment-spec path the server answers', async () => {
    const page = (await f.app.inject({ method: 'GET', url: '/docs/api' })).body;
    expect(page).toContain('id="segment"');
    for (const path of ['/v1/batch', '/v1/track', '/v1/identify', '/v1/page', '/v1/screen', '/v1/group', '/v1/alias']) {
      expect(page).toContain(`POST ${path}`);
      expect((await post(path, {})).statusCode).not.toBe(404);
    }
  });
});
