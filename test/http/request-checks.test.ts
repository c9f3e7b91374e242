import { gzipSync } from 'node:zlib';
import { once } from 'node:events';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { LightMyRequestResponse } from 'fastify';
import { REQUEST_ERRORS, type RequestErrorCode } from '../../src/errors/codes.js';
import { type Fixture, type FixtureOptions, makeFixture, send } from '../helpers/fixture.js';

const ok = { items: [{ event: 'invoice_paid', distinct_id: 'user_1' }] };
let f: Fixture;
afterEach(async () => f?.close());

async function fixture(opts: FixtureOptions = {}): Promise<Fixture> {
  f = await makeFixture(opts);
  return f;
}

/** Asserts the error envelope (docs/api.md, "Error envelope"), and returns the body. */
function expectError(res: LightMyRequestResponse, code: RequestErrorCode) {
  const body = res.json();
  expect(body.error?.code, res.body).toBe(code);
  expect(res.statusCode).toBe(REQUEST_ERRORS[code].status);
  expect(body.error.message).toMatch(/\w/);
  expect(body.error.docs_url).toBe(`http://inlet.test/docs/api#${code}`);
  expect(body.error.request_id).toMatch(/^req_/);
  expect(res.headers['request-id']).toBe(body.error.request_id);
  for (const h of Object.keys(res.headers)) expect(h).not.toMatch(/^access-control-/);
  return body;
}

describe('each request check answers its code', () => {
  it('404 not_found for an unknown /api/v1 path, another version, and a non-API path', async () => {
    await fixture();
    expectError(await f.app.inject({ method: 'POST', url: '/api/v1/export' }), 'not_found');
    expectError(await f.app.inject({ method: 'POST', url: '/api/v2/batch' }), 'not_found');
    expectError(await f.app.inject({ method: 'POST', url: '/api/batch' }), 'not_found');
    expectError(await f.app.inject({ method: 'GET', url: '/nothing-here' }), 'not_found');
  });

  it('404 not_found on a tracker host, whatever else is right', async () => {
    await fixture({ trackerHosts: ['t.customer.example'] });
    expectError(await send(f, ok, { headers: { host: 't.customer.example:443' } }), 'not_found');
    expect((await send(f, ok, { headers: { host: 'app.inlet.test' } })).statusCode).toBe(202);
  });

  it('410 api_version_retired under a retired version', async () => {
    await fixture({ retiredVersions: ['0'] });
    expectError(await f.app.inject({ method: 'POST', url: '/api/v0/batch' }), 'api_version_retired');
  });

  it('405 method_not_allowed with Allow: POST, OPTIONS included', async () => {
    await fixture();
    for (const method of ['GET', 'PUT', 'DELETE', 'OPTIONS', 'PATCH'] as const) {
      const res = await f.app.inject({ method, url: '/api/v1/batch', headers: { origin: 'https://evil.example' } });
      expectError(res, 'method_not_allowed');
      expect(res.headers.allow).toBe('POST');
    }
  });

  it('403 browser_not_allowed for Origin or Sec-Fetch-*, except a lone Sec-Fetch-Mode: cors', async () => {
    await fixture();
    expectError(await send(f, ok, { headers: { origin: 'https://app.example' } }), 'browser_not_allowed');
    expectError(await send(f, ok, { headers: { 'sec-fetch-site': 'cross-site' } }), 'browser_not_allowed');
    expectError(await send(f, ok, { headers: { 'sec-fetch-mode': 'navigate' } }), 'browser_not_allowed');
    expectError(await send(f, ok, { headers: { 'sec-fetch-mode': 'cors', 'sec-fetch-dest': 'empty' } }), 'browser_not_allowed');
    // What Node's built-in fetch sends from a server.
    expect((await send(f, ok, { headers: { 'sec-fetch-mode': 'cors' } })).statusCode).toBe(202);
  });

  it('401 missing_key without a Bearer header; the scheme is case-insensitive', async () => {
    await fixture();
    expectError(await f.app.inject({ method: 'POST', url: '/api/v1/batch', payload: ok }), 'missing_key');
    expectError(await send(f, ok, { headers: { authorization: `Basic ${f.key}` } }), 'missing_key');
    expectError(await send(f, ok, { headers: { authorization: 'Bearer' } }), 'missing_key');
    expect((await send(f, ok, { headers: { authorization: `bearer ${f.key}` } })).statusCode).toBe(202);
  });

  it('401 invalid_key for a malformed or unknown key', async () => {
    await fixture();
    expectError(await send(f, ok, { headers: { authorization: 'Bearer not-a-key' } }), 'invalid_key');
    expectError(await send(f, ok, { headers: { authorization: `Bearer srv_live_${'x'.repeat(32)}` } }), 'invalid_key');
  });

  it('404 not_found while the project has no API access', async () => {
    await fixture({ apiEnabled: false });
    expectError(await send(f, ok), 'not_found');
    await f.admin.updateProject(f.projectId, { apiEnabled: true });
    expect((await send(f, ok)).statusCode).toBe(202);
  });

  it('429 rate_limited with Retry-After: 10 past the per-key requests per second', async () => {
    await fixture({ limits: { keyRps: 3 } });
    for (let i = 0; i < 3; i++) expect((await send(f, ok)).statusCode).toBe(202);
    const res = await send(f, ok);
    expectError(res, 'rate_limited');
    expect(res.headers['retry-after']).toBe('10');
    f.clock.advance(1000);
    expect((await send(f, ok)).statusCode).toBe(202);
  });

  it('400 invalid_query for an unknown name, a repeated name or a value other than true/false', async () => {
    await fixture();
    for (const query of ['debug=true', 'validate=true&validate=false', 'strict=yes', 'validate', 'validate=TRUE']) {
      expectError(await send(f, ok, { query }), 'invalid_query');
    }
    expect((await send(f, ok, { query: 'validate=false&strict=false' })).statusCode).toBe(202);
  });

  it('415 unsupported_media_type unless application/json (charset=utf-8 is fine)', async () => {
    await fixture();
    expectError(await send(f, ok, { headers: { 'content-type': 'text/plain' } }), 'unsupported_media_type');
    expectError(await send(f, ok, { headers: { 'content-type': 'application/json; charset=latin1' } }), 'unsupported_media_type');
    expect((await send(f, ok, { headers: { 'content-type': 'application/json; charset=UTF-8' } })).statusCode).toBe(202);
  });

  it('415 unsupported_encoding unless gzip, identity or none', async () => {
    await fixture();
    expectError(await send(f, ok, { headers: { 'content-encoding': 'br' } }), 'unsupported_encoding');
    expect((await send(f, ok, { headers: { 'content-encoding': 'identity' } })).statusCode).toBe(202);
    const gz = gzipSync(JSON.stringify(ok));
    expect((await send(f, null, { raw: gz, headers: { 'content-encoding': 'gzip' } })).statusCode).toBe(202);
  });

  it('413 payload_too_large over 1 MiB as sent, and over 1 MiB once decompressed', async () => {
    await fixture();
    const big = JSON.stringify({ items: [{ event: 'e', distinct_id: 'u', properties: { pad: 'x'.repeat(1_048_576) } }] });
    const res = await send(f, null, { raw: big });
    expectError(res, 'payload_too_large');
    expect(res.headers.connection).toBe('close');
    expectError(await send(f, null, { raw: gzipSync(big), headers: { 'content-encoding': 'gzip' } }), 'payload_too_large');
  });

  it('a body of exactly 1 MiB is read; one byte more is refused', async () => {
    await fixture();
    const head = '{"items":[{"event":"e","distinct_id":"u"}],"pad":"';
    const exact = head + 'x'.repeat(1_048_576 - head.length - 2) + '"}';
    expect(Buffer.byteLength(exact)).toBe(1_048_576);
    expect((await send(f, null, { raw: exact })).statusCode).toBe(202);
    const over = head + 'x'.repeat(1_048_576 - head.length - 1) + '"}';
    expectError(await send(f, null, { raw: over }), 'payload_too_large');
    expectError(await send(f, null, { raw: gzipSync(over), headers: { 'content-encoding': 'gzip' } }), 'payload_too_large');
  });

  it('400 invalid_json for bad JSON, bad UTF-8 and corrupt gzip', async () => {
    await fixture();
    expectError(await send(f, null, { raw: '{"items": [' }), 'invalid_json');
    expectError(await send(f, null, { raw: Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]) }), 'invalid_json');
    expectError(await send(f, null, { raw: Buffer.from('not gzip at all'), headers: { 'content-encoding': 'gzip' } }), 'invalid_json');
    expectError(await send(f, null, { raw: '' }), 'invalid_json');
  });

  it('400 invalid_body, batch_empty and batch_too_many_items', async () => {
    await fixture();
    expectError(await send(f, [ok]), 'invalid_body');
    expectError(await send(f, { events: [] }), 'invalid_body');
    expectError(await send(f, { items: {} }), 'invalid_body');
    expectError(await send(f, { items: [] }), 'batch_empty');
    const many = Array.from({ length: 501 }, (_, i) => ({ event: 'e', distinct_id: `u${i}` }));
    expectError(await send(f, { items: many }), 'batch_too_many_items');
    expect((await send(f, { items: many.slice(0, 500) })).statusCode).toBe(202);
  });

  it('429 rate_limited when the project windows are full; nothing is stored', async () => {
    await fixture({ limits: { burst: 3 } });
    const three = { items: [0, 1, 2].map((i) => ({ event: 'e', distinct_id: `u${i}` })) };
    expect((await send(f, three)).statusCode).toBe(202);
    const res = await send(f, ok);
    expectError(res, 'rate_limited');
    expect(res.headers['retry-after']).toBe('10');
    expect(res.headers['ratelimit-policy']).toContain('"burst";q=3;w=10');
    expect(await f.collector.store.listEvents(f.sourceId, 10)).toHaveLength(3);
  });

  it('400 all_items_invalid and strict_item_invalid list the item errors in error.errors', async () => {
    await fixture();
    const all = expectError(await send(f, { items: [{ event: '$pageview', distinct_id: 'u' }, 7] }), 'all_items_invalid');
    expect(all.error.errors).toEqual([
      expect.objectContaining({ index: 0, code: 'reserved_event_name', field: 'event' }),
      expect.objectContaining({ index: 1, code: 'invalid_item', field: 'item' }),
    ]);
    const strict = expectError(await send(f, { items: [{ event: 'ok', distinct_id: 'u' }, { distinct_id: 'u' }] }, { query: 'strict=true' }), 'strict_item_invalid');
    expect(strict.error.errors).toEqual([expect.objectContaining({ index: 1, code: 'missing_event_name' })]);
    expect(await f.collector.store.listEvents(f.sourceId, 10)).toHaveLength(0);
  });
});

describe('the order of checks (docs/design.md, "Order of checks"): a request breaking two rules gets the earlier one', () => {
  const cases: { name: string; opts?: FixtureOptions; req: (f: Fixture) => Promise<LightMyRequestResponse>; code: RequestErrorCode }[] = [
    { name: 'unknown path beats wrong method', req: (f) => f.app.inject({ method: 'GET', url: '/api/v1/nope' }), code: 'not_found' },
    { name: 'tracker host beats retired version', opts: { trackerHosts: ['t.example'], retiredVersions: ['0'] }, req: (f) => f.app.inject({ method: 'POST', url: '/api/v0/batch', headers: { host: 't.example' } }), code: 'not_found' },
    { name: 'retired version beats wrong method', opts: { retiredVersions: ['0'] }, req: (f) => f.app.inject({ method: 'GET', url: '/api/v0/batch' }), code: 'api_version_retired' },
    { name: 'wrong method beats browser', req: (f) => f.app.inject({ method: 'GET', url: '/api/v1/batch', headers: { origin: 'https://x.example' } }), code: 'method_not_allowed' },
    { name: 'browser beats missing key', req: (f) => f.app.inject({ method: 'POST', url: '/api/v1/batch', headers: { origin: 'https://x.example' } }), code: 'browser_not_allowed' },
    { name: 'missing key beats bad query', req: (f) => f.app.inject({ method: 'POST', url: '/api/v1/batch?x=1' }), code: 'missing_key' },
    { name: 'invalid key beats not enabled', opts: { apiEnabled: false }, req: (f) => send({ ...f, key: `srv_live_${'A'.repeat(32)}` }, ok), code: 'invalid_key' },
    { name: 'not enabled beats bad query', opts: { apiEnabled: false }, req: (f) => send(f, ok, { query: 'x=1' }), code: 'not_found' },
    { name: 'bad query beats bad content type', req: (f) => send(f, ok, { query: 'x=1', headers: { 'content-type': 'text/plain' } }), code: 'invalid_query' },
    { name: 'bad content type beats bad encoding', req: (f) => send(f, ok, { headers: { 'content-type': 'text/plain', 'content-encoding': 'br' } }), code: 'unsupported_media_type' },
    { name: 'bad encoding beats too large', req: (f) => send(f, null, { raw: 'x'.repeat(1_100_000), headers: { 'content-encoding': 'br' } }), code: 'unsupported_encoding' },
    { name: 'too large beats invalid JSON', req: (f) => send(f, null, { raw: '{'.repeat(1_100_000) }), code: 'payload_too_large' },
    { name: 'invalid JSON beats everything in the body', req: (f) => send(f, null, { raw: '[' }), code: 'invalid_json' },
    { name: 'empty batch beats the project windows', opts: { limits: { burst: 1 } }, req: (f) => send(f, { items: [] }), code: 'batch_empty' },
    { name: 'project windows beat invalid items', opts: { limits: { burst: 1 } }, req: (f) => send(f, { items: [1, 2] }), code: 'rate_limited' },
    { name: 'strict beats all-invalid', req: (f) => send(f, { items: [1] }, { query: 'strict=true' }), code: 'strict_item_invalid' },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      await fixture(c.opts);
      expectError(await c.req(f), c.code);
    });
  }

  it('per-key rate limit beats a bad query, and a bad query is still counted against the key', async () => {
    await fixture({ limits: { keyRps: 1 } });
    expectError(await send(f, ok, { query: 'x=1' }), 'invalid_query');
    expectError(await send(f, ok, { query: 'x=1' }), 'rate_limited');
  });
});

describe('keys stop working on the very next request', () => {
  it('revoked, rolled with grace now, and keys of deleted source, project and organization', async () => {
    await fixture();
    expect((await send(f, ok)).statusCode).toBe(202);
    const list = await f.admin.listKeys(f.sourceId);
    await f.admin.revokeKey(list[0]!.id);
    expectError(await send(f, ok), 'invalid_key');

    const k2 = await f.admin.createKey(f.sourceId);
    expect((await send({ ...f, key: k2.key }, ok)).statusCode).toBe(202);
    const k3 = await f.admin.rollKey(k2.id, 'now');
    expectError(await send({ ...f, key: k2.key }, ok), 'invalid_key');
    expect((await send({ ...f, key: k3.key }, ok)).statusCode).toBe(202);

    const k4 = await f.admin.rollKey(k3.id, '24h');
    expect((await send({ ...f, key: k3.key }, ok)).statusCode).toBe(202);
    f.clock.advance(24 * 3600_000);
    expectError(await send({ ...f, key: k3.key }, ok), 'invalid_key');
    expect((await send({ ...f, key: k4.key }, ok)).statusCode).toBe(202);

    await f.admin.deleteSource(f.sourceId);
    expectError(await send({ ...f, key: k4.key }, ok), 'invalid_key');
  });

  it('deleting the project or the organization stops its keys', async () => {
    await fixture();
    await f.admin.deleteProject(f.projectId);
    expectError(await send(f, ok), 'invalid_key');
    await f.close();
    await fixture();
    await f.admin.deleteOrg(f.orgId);
    expectError(await send(f, ok), 'invalid_key');
  });

  it('last_used_at is kept', async () => {
    await fixture();
    expect((await f.admin.listKeys(f.sourceId))[0]!.last_used_at).toBeNull();
    expect((await send(f, ok)).statusCode).toBe(202);
    await f.collector.flush();
    expect((await f.admin.listKeys(f.sourceId))[0]!.last_used_at).toBe(new Date(f.clock.ms).toISOString());
  });
});

describe('failures of the durable write', () => {
  /** The real store, except that every transaction fails the way `fault` says. */
  async function failing(fault: () => Error): Promise<Fixture> {
    const real = await makeFixture();
    await real.app.close();
    const store = Object.create(real.collector.store, { transaction: { value: async () => Promise.reject(fault()) } }) as typeof real.collector.store;
    f = await makeFixture({ store, clock: real.clock });
    return f;
  }

  it('503 collection_unavailable with Retry-After: 5, and nothing stored or metered', async () => {
    const { StoreUnavailableError } = await import('../../src/stores/port.js');
    await failing(() => new StoreUnavailableError('disk full'));
    const res = await send(f, ok);
    expectError(res, 'collection_unavailable');
    expect(res.headers['retry-after']).toBe('5');
    expect(await f.collector.store.listEvents(f.sourceId, 10)).toEqual([]);
    expect(await f.collector.store.usage(f.projectId, '2026-11')).toBe(0);
  });

  it('500 internal_error reveals nothing of what broke', async () => {
    await failing(() => new Error('SELECT secret FROM internals'));
    const res = await send(f, ok);
    const body = expectError(res, 'internal_error');
    expect(JSON.stringify(body)).not.toContain('secret');
  });
});

/**
 * Sets `f` to a server on the real store, except that every commit waits
 * until the test lets it go; `inStore` settles when the first one reaches it.
 */
async function withHeldCommits(opts: FixtureOptions = {}): Promise<{ letGo: () => void; inStore: Promise<void> }> {
  const real = await makeFixture();
  await real.app.close();
  let letGo: () => void = () => {};
  const held = new Promise<void>((r) => (letGo = r));
  let reached: () => void = () => {};
  const inStore = new Promise<void>((r) => (reached = r));
  const port = real.collector.store;
  const store = Object.create(port, {
    transaction: { value: async (fn: never, o: never) => (reached(), await held, port.transaction(fn, o)) },
  }) as typeof port;
  f = await makeFixture({ ...opts, store, clock: real.clock });
  return { letGo, inStore };
}

describe('back-pressure on bodies', () => {
  it('a request with no room waits, and is answered 503 with Retry-After: 5 if none frees up in time; the one in hand is kept', async () => {
    const { Admission } = await import('../../src/edge/admission.js');
    const admission = new Admission(1, 500);
    const { letGo, inStore } = await withHeldCommits({ admission });
    const first = send(f, { items: [{ event: 'first', distinct_id: 'u', insert_id: 'a' }] });
    await inStore;
    const answer = send(f, { items: [{ event: 'second', distinct_id: 'u', insert_id: 'b' }] });
    let answered = false;
    void answer.then(() => (answered = true));
    // It waits for room (it is not refused at once) ...
    await vi.waitFor(() => expect(admission.waitingBodyBytes).toBeGreaterThan(0), { timeout: 10_000, interval: 5 });
    expect(answered).toBe(false);
    // ... and is told to come back once its wait is over, the first still held.
    const second = await answer;
    expect(admission.waitingBodyBytes).toBe(0);
    expectError(second, 'collection_unavailable');
    expect(second.headers['retry-after']).toBe('5');
    letGo();
    expect((await first).statusCode).toBe(202);
    // Room again: the next one goes straight through.
    expect((await send(f, { items: [{ event: 'third', distinct_id: 'u', insert_id: 'c' }] })).statusCode).toBe(202);
    expect((await f.collector.store.listEvents(f.sourceId, 10)).map((e) => e.event).sort()).toEqual(['first', 'third']);
  });
});

describe('a server that is closing', () => {
  it('answers a request that arrives on a busy keep-alive connection 503 collection_unavailable with Connection: close, and still commits the one in flight', async () => {
    const { connect } = await import('node:net');
    const { letGo, inStore } = await withHeldCommits();
    const address = await f.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = new URL(address);
    const request = (insertId: string) => {
      const body = JSON.stringify({ items: [{ event: 'e', distinct_id: 'u', insert_id: insertId }] });
      return `POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${f.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    };
    const socket = connect(Number(port), '127.0.0.1');
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (received += d));
    const ended = new Promise<void>((r) => socket.on('close', () => r()));
    socket.write(request('first'));
    await inStore;
    // The first request is in the store: close() leaves its connection open.
    const closing = f.app.close();
    // Once new connections are refused, the server has stopped listening,
    // which it does after the preClose hook that marks it closing.
    const accepts = () =>
      new Promise<boolean>((r) => {
        const probe = connect(Number(port), '127.0.0.1');
        probe.on('connect', () => (probe.destroy(), r(true)));
        probe.on('error', () => r(false));
      });
    await vi.waitFor(async () => expect(await accepts()).toBe(false), { interval: 5 });
    // The server has the second request once it emits it; only then is the first let go.
    const arrived = once(f.app.server, 'request');
    socket.write(request('second'));
    await arrived;
    letGo();
    await closing;
    await ended;
    const answers = received.split(/(?=HTTP\/1\.1 )/);
    expect(answers.map((a) => a.slice(0, 12))).toEqual(['HTTP/1.1 202', 'HTTP/1.1 503']);
    const refusal = answers[1]!;
    expect(refusal).toMatch(/\r\nconnection: close\r\n/i);
    expect(refusal).toMatch(/\r\nrequest-id: req_/i);
    expect(JSON.parse(refusal.slice(refusal.indexOf('\r\n\r\n') + 4)).error.code).toBe('collection_unavailable');
    expect((await f.collector.store.listEvents(f.sourceId, 10)).map((e) => e.insertId)).toEqual(['first']);
  });
});

describe('regressions', () => {
  it('a Content-Type Fastify cannot parse still goes through the checks in order', async () => {
    await fixture();
    const post = (headers: Record<string, string>, url = '/api/v1/batch', method: 'POST' | 'OPTIONS' = 'POST') =>
      f.app.inject({ method, url, headers, payload: JSON.stringify(ok) });
    for (const ct of ['foo', '', '/', 'application/']) {
      expectError(await post({ 'content-type': ct }), 'missing_key');
      expectError(await post({ 'content-type': ct, authorization: `Bearer ${f.key}` }), 'unsupported_media_type');
      expectError(await post({ 'content-type': ct, origin: 'https://x.example' }), 'browser_not_allowed');
      expectError(await post({ 'content-type': ct }, '/api/v1/batch', 'OPTIONS'), 'method_not_allowed');
      expectError(await post({ 'content-type': ct }, '/api/v1/nope'), 'not_found');
    }
  });

  it('a URL Fastify cannot decode is a 404 in the envelope, with Request-Id', async () => {
    await fixture();
    expectError(await f.app.inject({ method: 'POST', url: '/api/v1/%zz' }), 'not_found');
    expectError(await f.app.inject({ method: 'GET', url: '/%zz' }), 'not_found');
  });
});
