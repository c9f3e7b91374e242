import { gzipSync } from 'node:zlib';
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

function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return f.app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/json', ...headers }, payload: typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body) });
}

const events = () => f.collector.store.listEvents(f.sourceId, 100);
const person = (distinctId: string) => f.collector.store.findPerson(f.projectId, { distinctId });
/** An event as the SDK sends it, its library fields with it. */
const event = (type: string, extra: Record<string, unknown> = {}) => ({
  event_type: type, user_id: 'amp_u', device_id: 'dev-1', time: f.clock.ms, insert_id: `ins-${type}-${Math.random().toString(36).slice(2)}`,
  library: 'amplitude-node/1.5.73', platform: 'Node.js', os_name: 'linux', plan: {}, ...extra,
});

describe('/2/httpapi and /2/batch', () => {
  it('maps an event (user_id, device_id, time, insert_id, event_properties, groups) and answers 200 as the SDK reads it', async () => {
    const body = { api_key: f.key, events: [event('ordered', { insert_id: 'amp-1', event_properties: { total: 30 }, groups: { company: 'acme' } })] };
    const res = await post('/2/httpapi', body);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ code: 200, events_ingested: 1, payload_size_bytes: JSON.stringify(body).length, server_upload_time: expect.any(Number) });
    const [e] = await events();
    expect(e).toMatchObject({ event: 'ordered', distinctId: 'amp_u', insertId: 'amp-1', timestamp: f.clock.ms, properties: { total: 30, $groups: { company: 'acme' } } });
    expect(Object.keys(e!.properties).sort()).toEqual(['$groups', '$source_id', 'total']);
    expect((await post('/2/batch', body)).json()).toMatchObject({ code: 200, events_ingested: 1 });
    expect(await events()).toHaveLength(1);
  });

  it('/batch, the batch API\'s own path, which PostHog\'s route owns: a body with "events" is Amplitude\'s there, one with "batch" still PostHog\'s', async () => {
    const body = { api_key: f.key, events: [event('ordered', { insert_id: 'amp-b1' }), event('$reserved')] };
    const res = await post('/batch', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ code: 400, events_ingested: 1, events_with_invalid_fields: { event_type: [1] } });
    expect((await events()).map((e) => e.insertId)).toEqual(['amp-b1']);
    const posthog = await post('/batch', { api_key: f.key, batch: [{ event: 'ph', distinct_id: 'p1', uuid: '0190a6f0-0000-7000-8000-0000000000b1', properties: {} }] });
    expect(posthog.statusCode).toBe(200);
    expect(posthog.json()).toMatchObject({ accepted: 1 });
    // Only /batch is Amplitude's: at /batch/ (PostHog's own spelling) such a body is PostHog's, and refused as one.
    expect((await post('/batch/', body)).json()).toMatchObject({ error: { code: 'invalid_body' } });
  });

  it('a refusal names the field as the event sent it: an $identify\'s or an event\'s user_properties, a $groupidentify\'s group_properties, an event\'s event_properties', async () => {
    const res = await post('/2/httpapi', { api_key: f.key, events: [
      event('$identify', { user_properties: { $set: { $bogus: 1 } } }),
      event('clicked', { user_properties: { $setOnce: { $bogus: 1 } } }),
      event('$groupidentify', { groups: { company: 'acme' }, group_properties: { $set: { $bogus: 1 } } }),
      event('viewed', { event_properties: { $bogus: 1 } }),
    ] });
    expect(res.json(), res.body).toMatchObject({ code: 400 });
    expect(res.json().events_with_invalid_fields).toEqual({ user_properties: [0, 1], group_properties: [2], event_properties: [3] });
  });

  it('$identify: $set, $setOnce, $unset; user_properties on an event update the person too; $groupidentify is a group', async () => {
    await post('/2/httpapi', { api_key: f.key, events: [event('$identify', { user_properties: { $set: { plan: 'pro', temp: 1 }, $setOnce: { first: 'a' } } })] });
    await post('/2/httpapi', { api_key: f.key, events: [event('$identify', { user_properties: { $unset: { temp: '-' }, $setOnce: { first: 'b' } } })] });
    await post('/2/httpapi', { api_key: f.key, events: [event('clicked', { user_properties: { $set: { color: 'red' } } })] });
    expect((await person('amp_u'))?.traits).toEqual({ plan: 'pro', first: 'a', color: 'red' });
    const group = await post('/2/httpapi', { api_key: f.key, events: [event('$groupidentify', { groups: { company: 'acme' }, group_properties: { $set: { seats: 40 } } })] });
    expect(group.json()).toMatchObject({ code: 200 });
    expect(await f.collector.store.findGroup(f.projectId, 'company', 'acme')).toMatchObject({ traits: { seats: 40 } });
  });

  it('a refused event: 400 naming its index under its field, the others kept; sent again without it, a repeat stored once', async () => {
    const ok = event('ok', { insert_id: 'amp-ok' });
    const batch = [ok, event('$reserved'), event('ok2', { user_properties: { $add: { n: 1 } } }), event('ok3', { user_id: 'undefined', device_id: undefined })];
    const res = await post('/2/batch', { api_key: f.key, events: batch });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      code: 400, error: expect.stringMatching(/^reserved_event_name: /), events_ingested: 1,
      events_with_invalid_fields: { event_type: [1], user_properties: [2], user_id: [3] },
    });
    const again = await post('/2/batch', { api_key: f.key, events: [ok] });
    expect(again.json()).toMatchObject({ code: 200, events_ingested: 1 });
    expect((await events()).map((e) => e.event)).toEqual(['ok']);
    expect(await storedCounts(f, f.clock.ms)).toEqual(new Map([
      ['accepted ', 1], ['duplicate ', 1], ['refused reserved_event_name', 1], ['refused unsupported_operation', 1], ['refused invalid_distinct_id', 1],
    ]));
  });

  it('takes gzip, as the SDK may send it', async () => {
    const res = await post('/2/httpapi', gzipSync(JSON.stringify({ api_key: f.key, events: [event('zipped')] })), { 'content-encoding': 'gzip' });
    expect(res.json()).toMatchObject({ code: 200, events_ingested: 1 });
  });
});

describe('whole requests refused, in the shape the SDK reads', () => {
  it('no key, a wrong key, no events, too many, an unknown path under /2/, another method', async () => {
    expect((await post('/2/httpapi', { events: [event('x')] })).json()).toEqual({ code: 400, error: expect.stringMatching(/^missing_key: /), missing_field: 'api_key' });
    const wrong = await post('/2/httpapi', { api_key: 'srv_live_00000000000000000000000000000000', events: [event('x')] });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json()).toEqual({ code: 400, error: expect.stringMatching(/^Invalid API key: /) });
    expect((await post('/2/httpapi', { api_key: f.key, events: [] })).json()).toEqual({ code: 400, error: expect.stringMatching(/^batch_empty: /) });
    const many = await post('/2/batch', { api_key: f.key, events: Array.from({ length: 2001 }, () => ({ event_type: 'e' })) });
    expect(many.json()).toEqual({ code: 400, error: expect.stringMatching(/^batch_too_many_items: /) });
    const unknown = await post('/2/events', { api_key: f.key, events: [event('x')] });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toEqual({ code: 404, error: expect.stringMatching(/^not_found: .*\/2\/httpapi/) });
    const get = await f.app.inject({ method: 'GET', url: '/2/httpapi' });
    expect(get.json()).toEqual({ code: 405, error: expect.stringMatching(/^method_not_allowed: /) });
    expect(await events()).toEqual([]);
  });

  it('429 with Retry-After; 413 for a body over 1 MiB', async () => {
    await refixture({ limits: { keyRps: 1 } });
    const auth = { authorization: `Bearer ${f.key}` };
    expect((await post('/2/httpapi', { events: [event('a')] }, auth)).statusCode).toBe(200);
    const limited = await post('/2/httpapi', { events: [event('b')] }, auth);
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['retry-after']).toBeDefined();
    expect(limited.json()).toEqual({ code: 429, error: expect.stringMatching(/^rate_limited: /) });
    f.clock.advance(2000);
    const big = await post('/2/httpapi', { events: [event('c', { event_properties: { pad: 'x'.repeat(1_100_000) } })] }, auth);
    expect(big.statusCode).toBe(413);
    expect(big.json()).toEqual({ code: 413, error: expect.stringMatching(/^payload_too_large: /) });
  });
});

it('documents every Amplitude-compatible path the server answers, on the reference page and in OpenAPI', async () => {
  const page = (await f.app.inject({ method: 'GET', url: '/docs/api' })).body;
  expect(page).toContain('id="amplitude"');
  const doc = (await f.app.inject({ method: 'GET', url: '/docs/api/openapi.json' })).json();
  for (const path of ['/2/httpapi', '/2/batch']) {
    expect(page).toContain(`POST ${path}`);
    expect(doc.paths[path].post.tags).toEqual(['Amplitude-compatible']);
  }
});

it('an $identify refused for one of its groups stores none of them: the answer names it refused, and nothing of it is kept', async () => {
  const identify = event('$identify', { user_id: 'amp_g', groups: { company: 'acme', ['x'.repeat(300)]: 'k' }, user_properties: { $set: { plan: 'pro' } } });
  const res = await post('/2/httpapi', { api_key: f.key, events: [identify] });
  expect(res.statusCode).toBe(400);
  expect(res.json()).toMatchObject({ events_ingested: 0, events_with_invalid_fields: { groups: [0] } });
  expect(await f.collector.store.findGroup(f.projectId, 'company', 'acme')).toBeNull();
  expect(await person('amp_g')).toBeNull();
});

it('an $identify whose group the store refuses (a sixth group type) is answered refused at its index, none of its updates written', async () => {
  for (const type of ['t1', 't2', 't3', 't4', 't5']) {
    const res = await post('/2/httpapi', { api_key: f.key, events: [event('$groupidentify', { groups: { [type]: 'k' }, group_properties: { $set: { n: 1 } } })] });
    expect(res.statusCode).toBe(200);
  }
  const ok = event('kept', { user_id: 'amp_six' });
  const identify = event('$identify', { user_id: 'amp_six', groups: { t1: 'k', t6: 'k' }, user_properties: { $set: { plan: 'pro' } } });
  const res = await post('/2/httpapi', { api_key: f.key, events: [ok, identify] });
  expect(res.statusCode).toBe(400);
  expect(res.json()).toMatchObject({ events_ingested: 1, events_with_invalid_fields: { groups: [1] }, error: expect.stringMatching(/^too_many_group_types: /) });
  expect((await person('amp_six'))?.traits).toEqual({});
  expect((await person('amp_six'))?.groups).toEqual([]);
  expect(await storedCounts(f, f.clock.ms)).toEqual(new Map([['accepted ', 6], ['refused too_many_group_types', 1]]));
});

it('events_ingested counts only what was stored: events the monthly limit drops (collection_paused) are not ingested', async () => {
  await f.admin.updateProject(f.projectId, { monthlyEventLimit: 2 });
  const res = await post('/2/httpapi', { api_key: f.key, events: [event('a'), event('b'), event('c')] });
  expect(res.statusCode).toBe(200);
  expect(res.json()).toMatchObject({ code: 200, events_ingested: 2 });
  expect(await events()).toHaveLength(2);
});

it('$identify and $groupidentify events naming more than 2,000 groups in one request are refused whole: each is an item written, and one request\'s write stays a batch\'s size', async () => {
  const keys = Array.from({ length: 1001 }, (_, i) => `k${i}`);
  const res = await post('/2/httpapi', { api_key: f.key, events: [event('$identify', { groups: { company: keys } }), event('$identify', { groups: { team: keys } })] });
  expect(res.statusCode).toBe(400);
  expect(res.json()).toEqual({ code: 400, error: expect.stringMatching(/^batch_too_many_items: The \$identify and \$groupidentify events name 2002 groups/) });
  expect(await person('amp_u')).toBeNull();
});

it('a $groupidentify naming several groups of its type (groupIdentify with a list of names) gives each the traits', async () => {
  const res = await post('/2/httpapi', { api_key: f.key, events: [event('$groupidentify', { groups: { company: ['acme', 'globex'] }, group_properties: { $set: { seats: 40 } } })] });
  expect(res.json()).toMatchObject({ code: 200, events_ingested: 1 });
  for (const key of ['acme', 'globex']) expect(await f.collector.store.findGroup(f.projectId, 'company', key)).toMatchObject({ traits: { seats: 40 } });
});

it('a request refused before any route (HTTP/1.1 without Host) is answered in the shape the SDK reads, as is one to Mixpanel\'s routes', async () => {
  const { connect } = await import('node:net');
  const { port } = new URL(await f.app.listen({ port: 0, host: '127.0.0.1' }));
  const raw = (request: string) =>
    new Promise<string>((resolve) => {
      let received = '';
      const socket = connect(Number(port), '127.0.0.1');
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => (received += d));
      socket.on('close', () => resolve(received));
      socket.write(request);
    });
  const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
  const amplitude = await raw('POST /2/httpapi HTTP/1.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}');
  expect(amplitude.slice(0, 12)).toBe('HTTP/1.1 400');
  expect(bodyOf(amplitude)).toEqual({ code: 400, error: expect.stringMatching(/^bad_request: /) });
  const mixpanel = await raw('GET /track?data=e30 HTTP/1.1\r\nConnection: close\r\n\r\n');
  expect(bodyOf(mixpanel)).toEqual({ status: 0, error: expect.stringMatching(/^bad_request: /) });
  // Refused by Node's parser before any request object: headers over the limit, a Mixpanel GET's data= among them.
  const big = 'A'.repeat(20_000);
  const overflow = await raw(`POST /2/httpapi HTTP/1.1\r\nHost: x\r\nX-Padding: ${big}\r\n\r\n`);
  expect(overflow.slice(0, 12)).toBe('HTTP/1.1 431');
  expect(bodyOf(overflow)).toEqual({ code: 431, error: expect.stringMatching(/^headers_too_large: /) });
  const longGet = await raw(`GET /track?data=${big} HTTP/1.1\r\nHost: x\r\n\r\n`);
  expect(longGet.slice(0, 12)).toBe('HTTP/1.1 431');
  expect(bodyOf(longGet)).toEqual({ status: 0, error: expect.stringMatching(/^headers_too_large: /) });
  // Any other route keeps the envelope.
  const ours = await raw(`POST /api/v1/batch HTTP/1.1\r\nHost: x\r\nX-Padding: ${big}\r\n\r\n`);
  expect(bodyOf(ours)).toMatchObject({ error: { code: 'headers_too_large' } });
});
