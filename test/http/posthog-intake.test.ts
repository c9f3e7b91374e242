import { gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ReadBudget } from '../../src/edge/read-budget.js';
import { type Fixture, makeFixture } from '../helpers/fixture.js';
import { storedCounts } from '../helpers/outcomes.js';

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture();
});
afterEach(async () => f.close());

/** POSTs to a PostHog path with the key in the body, as posthog-node does, unless `headers` say otherwise. */
function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return f.app.inject({
    method: 'POST',
    url: path,
    headers: { 'content-type': 'application/json', ...headers },
    payload: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body),
  });
}

const events = () => f.collector.store.listEvents(f.sourceId, 100);
const capture = (uuid: string, extra: Record<string, unknown> = {}) => ({ event: 'paid', distinct_id: 'u1', uuid, properties: { $lib: 'posthog-node' }, ...extra });

describe('paths and keys', () => {
  it('answers /batch/, /capture/, /e/ and /i/v0/e/, with and without the trailing slash', async () => {
    let n = 0;
    for (const path of ['/batch/', '/batch', '/capture/', '/capture', '/e/', '/e', '/i/v0/e/', '/i/v0/e']) {
      const res = await post(path, { api_key: f.key, batch: [capture(`p-${++n}`)] });
      expect(res.statusCode, `${path}: ${res.body}`).toBe(200);
      expect(res.json()).toMatchObject({ accepted: 1, errors: [] });
    }
    expect((await events()).map((e) => e.insertId).sort()).toEqual(['p-1', 'p-2', 'p-3', 'p-4', 'p-5', 'p-6', 'p-7', 'p-8']);
  });

  it('takes the key as api_key or token in the body, or as Bearer; one event alone or an array of events', async () => {
    expect((await post('/capture/', { token: f.key, ...capture('k-1') })).statusCode).toBe(200);
    expect((await post('/capture/', { api_key: f.key, ...capture('k-2') })).statusCode).toBe(200);
    expect((await post('/e/', [capture('k-3')], { authorization: `Bearer ${f.key}` })).statusCode).toBe(200);
    expect((await events()).map((e) => e.insertId).sort()).toEqual(['k-1', 'k-2', 'k-3']);
  });

  it('no key anywhere is 401 missing_key naming api_key; an unknown key is invalid_key; a browser is refused before the key', async () => {
    const none = await post('/batch/', { batch: [capture('x')] });
    expect(none.statusCode).toBe(401);
    expect(none.json().error).toMatchObject({ code: 'missing_key', message: expect.stringContaining('api_key') });
    expect((await post('/batch/', { api_key: 'srv_live_00000000000000000000000000000000', batch: [capture('x')] })).json().error.code).toBe('invalid_key');
    expect((await post('/batch/', { api_key: f.key, batch: [capture('x')] }, { origin: 'https://example.com' })).json().error.code).toBe('browser_not_allowed');
  });

  it('an unknown path beside them is 404, another method 405, in the envelope', async () => {
    expect((await post('/batches/', {})).statusCode).toBe(404);
    expect((await post('/i/v0/x/', {})).statusCode).toBe(404);
    const get = await f.app.inject({ method: 'GET', url: '/batch/' });
    expect(get.statusCode).toBe(405);
    expect(get.headers.allow).toBe('POST');
  });

  it('a body with its key inside is read in the keyless pool under its client address, as a Segment writeKey body is', async () => {
    await f.close();
    const reading = new ReadBudget();
    f = await makeFixture({ reading });
    // The client's address already has its whole share of the keyless pool being read.
    const held = reading.reserve({ address: '127.0.0.1' }, 1_048_576);
    expect(typeof held).not.toBe('string');
    try {
      const keyless = await post('/batch/', { api_key: f.key, batch: [capture('pool-1')] });
      expect(keyless.statusCode).toBe(503);
      expect(keyless.json().error.code).toBe('collection_unavailable');
      // A key in a header is read against its project's share, which is free.
      const bearer = await post('/batch/', { batch: [capture('pool-2')] }, { authorization: `Bearer ${f.key}` });
      expect(bearer.statusCode, bearer.body).toBe(200);
    } finally {
      if (typeof held !== 'string') held.release();
    }
  });
});

describe('bodies', () => {
  it('reads gzip from Content-Encoding, as posthog-node sends it, and from ?compression=gzip-js, as the browser library does', async () => {
    const zipped = gzipSync(JSON.stringify({ api_key: f.key, batch: [capture('z-1')] }));
    expect((await post('/batch/', zipped, { 'content-encoding': 'gzip' })).statusCode).toBe(200);
    const viaQuery = gzipSync(JSON.stringify({ api_key: f.key, batch: [capture('z-2')] }));
    const res = await post('/e/?compression=gzip-js&ver=1.200.0&_=1795000000000', viaQuery, { 'content-type': 'text/plain' });
    expect(res.statusCode, res.body).toBe(200);
    expect((await events()).map((e) => e.insertId).sort()).toEqual(['z-1', 'z-2']);
  });

  it('refuses bad JSON, a wrong shape, an empty and an oversized batch with the usual codes', async () => {
    expect((await post('/batch/', '{nope', { authorization: `Bearer ${f.key}` })).json().error.code).toBe('invalid_json');
    expect((await post('/batch/', { api_key: f.key, items: [] })).json().error.code).toBe('invalid_body');
    expect((await post('/batch/', { api_key: f.key, batch: [] })).json().error.code).toBe('batch_empty');
    expect((await post('/batch/', { api_key: f.key, batch: Array(501).fill(capture('m')) })).json().error.code).toBe('batch_too_many_items');
    expect((await post('/e/?compression=lz64', { api_key: f.key, ...capture('l') })).json().error.code).toBe('unsupported_encoding');
  });
});

describe('mapping', () => {
  it('stores a capture with PostHog\'s enrichment stripped and $groups kept; other $ events are refused in a 200', async () => {
    const res = await post('/batch/', { api_key: f.key, batch: [
      { event: 'order_completed', distinct_id: 'u1', uuid: 'm-1', properties: { total: 30, $lib: 'posthog-node', $lib_version: '5.70.0', $geoip_disable: true, $groups: { company: 'acme' } } },
      { event: '$feature_flag_called', distinct_id: 'u1', uuid: 'm-2', properties: {} },
      { event: '$pageview', distinct_id: 'u1', uuid: 'm-3', properties: { $current_url: 'https://example.com/pricing' } },
    ] });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ accepted: 2, errors: [{ index: 1, code: 'reserved_event_name' }] });
    const stored = await events();
    expect(stored.find((e) => e.event === 'order_completed')!.properties).toEqual(expect.objectContaining({ total: 30, $groups: { company: 'acme' } }));
    expect(stored.find((e) => e.event === 'order_completed')!.properties).not.toHaveProperty('$lib');
    expect(stored.map((e) => e.event).sort()).toEqual(['$pageview', 'order_completed']);
  });

  it('a uuid is one insert_id across intakes: the same event sent again through /api/v1/batch is a duplicate', async () => {
    expect((await post('/batch/', { api_key: f.key, batch: [capture('shared-1')] })).json()).toMatchObject({ accepted: 1, duplicates: [] });
    const again = await f.app.inject({
      method: 'POST',
      url: '/api/v1/batch',
      headers: { authorization: `Bearer ${f.key}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ items: [{ event: 'paid', distinct_id: 'u1', insert_id: 'shared-1' }] }),
    });
    expect(again.json()).toMatchObject({ accepted: 1, duplicates: [0] });
    expect((await post('/capture/', { api_key: f.key, ...capture('shared-1') })).json()).toMatchObject({ accepted: 1, duplicates: [0] });
    expect(await events()).toHaveLength(1);
  });
});

describe('posthog-set-counted-twice: a message with $set is one item, answered and counted once, at its own index', () => {
  const upgrade = (i: number, set: Record<string, unknown> = { plan: 'pro' }) => ({ event: 'upgraded', distinct_id: `u${i}`, uuid: `s-${i}`, properties: { seats: i, $set: set } });

  it('500 messages carrying $set are 500 accepted, 500 counted against the limits and in the outcomes; a resend is 500 repeats', async () => {
    await f.close();
    // Counted twice, the 500 messages were 1,000 items, over a window of 500.
    f = await makeFixture({ limits: { burst: 500 } });
    const batch = Array.from({ length: 500 }, (_, i) => upgrade(i));
    const res = await post('/batch/', { api_key: f.key, batch });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ accepted: 500, errors: [], duplicates: [] });
    expect(await f.collector.store.listEvents(f.sourceId, 1000)).toHaveLength(500);
    expect(await f.collector.store.findPerson(f.projectId, { distinctId: 'u499' })).toMatchObject({ traits: { plan: 'pro' } });
    await f.collector.outcomes.flush();
    expect(await storedCounts(f, f.clock.ms)).toEqual(new Map([['accepted ', 500]]));

    f.clock.advance(60_000);
    const again = await post('/batch/', { api_key: f.key, batch });
    expect(again.json()).toMatchObject({ accepted: 500, duplicates: batch.map((_, i) => i) });
  });

  it('a message whose $set is refused is refused whole, at its own index, under the field it sent it in; its event is not stored', async () => {
    const long = 'k'.repeat(300);
    const batch = [upgrade(0), upgrade(1, { [long]: 1 }), upgrade(2), { event: '$nope', distinct_id: 'u3', properties: { $set: { [long]: 1 } } }];
    const res = await post('/batch/', { api_key: f.key, batch });
    expect(res.statusCode).toBe(200);
    const answer = res.json();
    expect(answer.accepted).toBe(2);
    expect(answer.errors.map((e: { index: number; code: string; field: string }) => [e.index, e.code, e.field])).toEqual([
      [1, 'invalid_properties', 'properties.$set'],
      [3, 'reserved_event_name', 'event'],
      [3, 'invalid_properties', 'properties.$set'],
    ]);
    expect((await events()).map((e) => e.distinctId).sort()).toEqual(['u0', 'u2']);
    expect(await f.collector.store.findPerson(f.projectId, { distinctId: 'u1' })).toBeNull();
    await f.collector.outcomes.flush();
    expect(await storedCounts(f, f.clock.ms)).toEqual(new Map([['accepted ', 2], ['refused invalid_properties', 1], ['refused reserved_event_name', 1]]));
  });
});

describe('reference page', () => {
  it('documents every PostHog-compatible path the server answers', async () => {
    const page = (await f.app.inject({ method: 'GET', url: '/docs/api' })).body;
    expect(page).toContain('id="posthog"');
    for (const path of ['/batch/', '/capture/', '/e/', '/i/v0/e/']) expect(page).toContain(`POST ${path}`);
  });
});
