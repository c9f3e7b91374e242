import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type Fixture, type FixtureOptions, makeFixture } from '../helpers/fixture.js';
import { storedCounts } from '../helpers/outcomes.js';

let f: Fixture;
beforeEach(async () => {
  f = await makeFixture();
});
afterEach(async () => f.close());

async function refixture(opts: FixtureOptions): Promise<void> {
  await f.close();
  f = await makeFixture(opts);
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');
const events = () => f.collector.store.listEvents(f.sourceId, 100);
const person = (distinctId: string) => f.collector.store.findPerson(f.projectId, { distinctId });

/** A GET with data= in the query, as the SDK sends one message. */
function get(path: string, data: unknown, query = '') {
  return f.app.inject({ method: 'GET', url: `${path}?ip=0&verbose=0&data=${encodeURIComponent(b64(data))}${query}` });
}

/** A POST of a form data=, as the SDK sends a batch. */
function form(path: string, dataText: string, query = '') {
  return f.app.inject({ method: 'POST', url: `${path}?ip=0${query}`, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `data=${dataText}` });
}

const track = (event: string, props: Record<string, unknown> = {}) => ({
  event,
  properties: { token: f.key, distinct_id: 'mp_user', time: Math.floor(f.clock.ms / 1000), mp_lib: 'node', $lib_version: '0.24.0', ...props },
});

describe('/track', () => {
  it('a GET with data= stores the event: ids, time in seconds, $insert_id, the library fields left out; answered 1', async () => {
    const res = await get('/track', track('signup', { plan: 'pro', $insert_id: 'mp-ins-1', $device_id: 'per_browser_mp', $current_url: 'https://example.com/a' }));
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe('1');
    const [e] = await events();
    expect(e).toMatchObject({ event: 'signup', distinctId: 'mp_user', anonymousId: 'per_browser_mp', insertId: 'mp-ins-1', timestamp: Math.floor(f.clock.ms / 1000) * 1000 });
    expect(e!.properties).toMatchObject({ plan: 'pro', $current_url: 'https://example.com/a' });
    for (const k of ['token', 'mp_lib', '$lib_version', 'time', 'distinct_id', '$insert_id']) expect(e!.properties).not.toHaveProperty(k);
  });

  it('a POST form of an array, time in ms, + turned into spaces, sent again: stored once; verbose=1 answers JSON', async () => {
    const batch = Array.from({ length: 40 }, (_, i) => track('viewed', { n: i, $insert_id: `mp-b-${i}`, time: f.clock.ms - i, label: 'ü?>>>~~~' }));
    const data = b64(batch);
    expect(data).toContain('+');
    const spaced = data.replaceAll('+', ' ');
    for (let round = 0; round < 2; round++) {
      const res = await form('/track', spaced, '&verbose=1');
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ status: 1, error: null });
    }
    expect(await events()).toHaveLength(40);
    expect(await storedCounts(f, f.clock.ms)).toEqual(new Map([['accepted ', 40], ['duplicate ', 40]]));
  });

  it('a refused event is answered 0 (or status 0 naming its code with verbose=1); the others are kept', async () => {
    const batch = [track('ok', { $insert_id: 'r-1' }), track('$bad'), track('ok2', { $nope: 1 })];
    expect((await form('/track', encodeURIComponent(b64(batch)))).body).toBe('0');
    const verbose = await form('/track', encodeURIComponent(b64([track('ok3')])).concat(''), '&verbose=1');
    expect(verbose.json()).toEqual({ status: 1, error: null });
    const refused = await get('/track', track('$bad'), '&verbose=1');
    expect(refused.json()).toMatchObject({ status: 0, error: expect.stringContaining('reserved_event_name') });
    expect((await events()).map((e) => e.event).sort()).toEqual(['ok', 'ok3']);
  });

  it('$create_alias is an alias', async () => {
    await get('/track', track('first', { distinct_id: 'mp_new' }));
    expect((await get('/track', track('$create_alias', { distinct_id: 'mp_new', alias: 'mp_old' }))).body).toBe('1');
    expect((await person('mp_old'))?.id).toBe((await person('mp_new'))?.id);
  });
});

describe('/engage and /groups', () => {
  const engage = (op: Record<string, unknown>) => ({ $token: f.key, $distinct_id: 'mp_p', ...op });

  it('$set, $set_once and $unset are an identify; Mixpanel\'s $email and $name are plain traits', async () => {
    expect((await get('/engage', engage({ $set: { plan: 'pro', $email: 'a@example.com', $name: 'Ann', old: 1 } }))).body).toBe('1');
    expect((await get('/engage', engage({ $set_once: { first_seen: 'x' } }))).body).toBe('1');
    expect((await get('/engage', engage({ $unset: ['old'] }))).body).toBe('1');
    expect((await person('mp_p'))?.traits).toEqual({ plan: 'pro', email: 'a@example.com', name: 'Ann', first_seen: 'x' });
  });

  it('$add, $append, $union, $remove and $delete are refused unsupported_operation, each message alone', async () => {
    const ops = [{ $add: { n: 1 } }, { $append: { l: 1 } }, { $union: { l: [1] } }, { $remove: { l: 1 } }, { $delete: '' }];
    const res = await form('/engage', encodeURIComponent(b64([engage({ $set: { kept: true } }), ...ops.map(engage)])), '&verbose=1');
    expect(res.json()).toMatchObject({ status: 0, error: expect.stringMatching(/^unsupported_operation \(message 1, \$add: /) });
    expect((await person('mp_p'))?.traits).toEqual({ kept: true });
    expect(await storedCounts(f, f.clock.ms)).toEqual(new Map([['accepted ', 1], ['refused unsupported_operation', 5]]));
  });

  it('/groups $set is a group: $group_key its type, $group_id its key', async () => {
    const res = await get('/groups', { $token: f.key, $group_key: 'company', $group_id: 'acme', $set: { seats: 5 } });
    expect(res.body).toBe('1');
    expect(await f.collector.store.findGroup(f.projectId, 'company', 'acme')).toMatchObject({ traits: { seats: 5 } });
    const union = await get('/groups', { $token: f.key, $group_key: 'company', $group_id: 'acme', $union: { tags: ['a'] } }, '&verbose=1');
    expect(union.json()).toMatchObject({ status: 0, error: expect.stringContaining('unsupported_operation') });
  });
});

describe('/import', () => {
  it('a JSON array with the key as the Basic user: num_records_imported; a refused record is named by index and insert_id, the rest kept', async () => {
    const auth = { authorization: `Basic ${Buffer.from(`${f.key}:`).toString('base64')}`, 'content-type': 'application/json' };
    const old = f.clock.ms - 30 * 86_400_000;
    const records = [
      { event: 'imported', properties: { distinct_id: 'u1', time: old, $insert_id: 'imp-1' } },
      { event: 'imported', properties: { distinct_id: 'u1', $insert_id: 'imp-2' } },
    ];
    const res = await f.app.inject({ method: 'POST', url: '/import?strict=1', headers: auth, payload: JSON.stringify(records) });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      code: 400, status: 'Bad Request', num_records_imported: 1,
      failed_records: [{ index: 1, insert_id: 'imp-2', field: 'timestamp', message: expect.stringMatching(/^missing_timestamp: /) }],
    });
    const ok = await f.app.inject({ method: 'POST', url: '/import', headers: auth, payload: JSON.stringify(records.slice(0, 1)) });
    expect(ok.json()).toEqual({ code: 200, status: 'OK', num_records_imported: 1 });
    expect((await events()).map((e) => e.timestamp)).toEqual([old]);
  });

  it('takes the token in the records, and the data= the SDK sends, answered as /track is (what the SDK reads)', async () => {
    const res = await form('/import', encodeURIComponent(b64([track('imported', { time: f.clock.ms - 86_400_000 * 20 })])));
    expect(res.body).toBe('1');
    const refused = await get('/import', track('imported', { time: undefined }), '&verbose=1');
    expect(refused.json()).toEqual({ status: 0, error: expect.stringMatching(/^missing_timestamp /) });
    expect(await events()).toHaveLength(1);
  });
});

describe('whole requests refused, in the shape the SDK reads', () => {
  it('a bad base64, a wrong key, no data, a huge array, a wrong method: status and error', async () => {
    expect((await form('/track', '!!!notbase64')).json()).toEqual({ status: 0, error: expect.stringMatching(/^missing_key: /) });
    const basic = `Basic ${Buffer.from(`${f.key}:`).toString('base64')}`;
    const bad = await f.app.inject({ method: 'POST', url: '/track', headers: { authorization: basic }, payload: 'data=!!!notbase64' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ status: 0, error: expect.stringMatching(/^invalid_body: data= is not base64/) });
    const wrong = await get('/track', track('x', { token: 'srv_live_00000000000000000000000000000000' }));
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json()).toEqual({ status: 0, error: expect.stringMatching(/^invalid_key: /) });
    const none = await get('/track', { event: 'x', properties: { distinct_id: 'u' } });
    expect(none.json()).toEqual({ status: 0, error: expect.stringMatching(/^missing_key: .*properties\.token/) });
    const empty = await f.app.inject({ method: 'GET', url: '/engage?verbose=1' });
    expect(empty.json()).toEqual({ status: 0, error: expect.stringMatching(/^missing_key: /) });
    const huge = await form('/track', encodeURIComponent(b64(Array.from({ length: 2001 }, () => ({ event: 'e', properties: { token: f.key } })))));
    expect(huge.statusCode).toBe(400);
    expect(huge.json()).toEqual({ status: 0, error: expect.stringMatching(/^batch_too_many_items: /) });
    const put = await f.app.inject({ method: 'PUT', url: '/track' });
    expect(put.statusCode).toBe(405);
    expect(put.headers.allow).toBe('GET, POST');
    expect(put.json()).toMatchObject({ status: 0 });
    const imp = await f.app.inject({ method: 'POST', url: '/import', headers: { 'content-type': 'application/json' }, payload: '[{"event":"x","properties":{"token":"nope"}}]' });
    expect(imp.statusCode).toBe(401);
    expect(imp.json()).toEqual({ code: 401, status: 'Unauthorized', error: expect.stringMatching(/^invalid_key: /) });
    expect(await events()).toEqual([]);
  });

  it('a key over its rate is 429 with Retry-After; a body over 1 MiB is 413', async () => {
    await refixture({ limits: { keyRps: 1 } });
    const auth = { authorization: `Basic ${Buffer.from(`${f.key}:`).toString('base64')}` };
    await f.app.inject({ method: 'POST', url: '/track', headers: auth, payload: `data=${encodeURIComponent(b64(track('a')))}` });
    const limited = await f.app.inject({ method: 'POST', url: '/track', headers: auth, payload: `data=${encodeURIComponent(b64(track('b')))}` });
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['retry-after']).toBeDefined();
    expect(limited.json()).toEqual({ status: 0, error: expect.stringMatching(/^rate_limited: /) });
    f.clock.advance(2000);
    const big = await f.app.inject({ method: 'POST', url: '/track', headers: auth, payload: `data=${'A'.repeat(1_100_000)}` });
    expect(big.statusCode).toBe(413);
    expect(big.json()).toEqual({ status: 0, error: expect.stringMatching(/^payload_too_large: /) });
  });
});

it('documents every Mixpanel-compatible path the server answers, on the reference page and in OpenAPI', async () => {
  const page = (await f.app.inject({ method: 'GET', url: '/docs/api' })).body;
  expect(page).toContain('id="mixpanel"');
  const doc = (await f.app.inject({ method: 'GET', url: '/docs/api/openapi.json' })).json();
  for (const path of ['/track', '/engage', '/groups', '/import']) {
    expect(page).toContain(`<code>${path}</code>`);
    expect(doc.paths[path].post.tags).toEqual(['Mixpanel-compatible']);
  }
  expect(page).toContain('id="unsupported_operation"');
});

it('the log line of a GET names its route, never its query (the key and the messages are in data=)', async () => {
  const stream = new PassThrough();
  let logs = '';
  stream.on('data', (d) => (logs += d));
  await refixture({ logStream: stream });
  const data = b64(track('logged', { note: 'PROP-MARKER-51ab' }));
  expect((await f.app.inject({ method: 'GET', url: `/track?data=${encodeURIComponent(data)}` })).body).toBe('1');
  expect((await f.app.inject({ method: 'GET', url: `/track?data=${encodeURIComponent(b64(track('x', { token: 'srv_live_0000' })))}` })).statusCode).toBe(401);
  const requests = logs.trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.msg === 'request');
  expect(requests.map((l) => [l.method, l.route, l.status])).toEqual([['GET', '/track', 200], ['GET', '/track', 401]]);
  for (const leak of [f.key, data.slice(0, 40), encodeURIComponent(data).slice(0, 40), 'PROP-MARKER-51ab', 'data=']) expect(logs).not.toContain(leak);
});
