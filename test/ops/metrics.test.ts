/**
 * The metrics move as requests of each outcome are sent, read the way
 * Prometheus reads them: by scraping the metrics listener.
 */
import type http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EdgeCounters } from '../../src/edge/edge-counters.js';
import { Metrics } from '../../src/metrics/metrics.js';
import { metricsPort, startMetricsServer, stopMetricsServer } from '../../src/metrics/metrics-server.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { type Fixture, TestClock, makeFixture, send, tempDir } from '../helpers/fixture.js';
import { rawRequest } from '../helpers/raw-http.js';

const tmp = tempDir('inlet-metrics-');
const metrics = new Metrics();
const clock = new TestClock();
const counters = new EdgeCounters();
let f: Fixture;
let listener: http.Server;

beforeAll(async () => {
  const store = SqliteStore.open(tmp.dir);
  f = await makeFixture({ store, metrics, clock, counters, limits: { keyRps: 1 } });
  // Port 0 here: the setting's 0 (off) is decided in serve.ts, not by the listener.
  listener = await startMetricsServer(metrics, 0, '127.0.0.1');
});
afterAll(async () => {
  await stopMetricsServer(listener);
  await f.close();
  tmp.remove();
});

/** One sample of a scrape, by name and labels (all of them must match). */
async function sample(name: string, labels: Record<string, string> = {}): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${metricsPort(listener)}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  let total = 0;
  let found = false;
  for (const line of text.split('\n')) {
    const m = /^([a-z_:]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (m === null || m[1] !== name) continue;
    const have = new Map([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1]!, l[2]!]));
    if (Object.entries(labels).every(([k, v]) => have.get(k) === v)) {
      total += Number(m[3]);
      found = true;
    }
  }
  if (!found) throw new Error(`no sample ${name}${JSON.stringify(labels)} in the scrape`);
  return total;
}

let listening: Promise<number> | null = null;
/** The public port, listening from the first call on. */
function publicPort(): Promise<number> {
  listening ??= f.app.listen({ port: 0, host: '127.0.0.1' }).then((a) => Number(new URL(a).port));
  return listening;
}

/** Sends with a fresh second, so the 1-per-second key limit refuses only the requests meant to meet it. */
function sendNext(body: unknown, opts?: Parameters<typeof send>[2]) {
  clock.advance(1001);
  return send(f, body, opts);
}

it('counts requests by route and status, and items by outcome, reason and code', async () => {
  const before = {
    accepted: await sample('inlet_items_total', { outcome: 'accepted' }),
    ok: await sample('inlet_http_requests_total', { route: '/api/*', method: 'POST', status: '202' }).catch(() => 0),
  };
  const items = [
    { event: 'signup', distinct_id: 'u1', insert_id: 'm-1' },
    { event: 'signup', distinct_id: 'u2', insert_id: 'm-2' },
    { event: 'bot', distinct_id: 'u3', properties: { $user_agent: 'Googlebot/2.1 (+http://www.google.com/bot.html)' } },
    { distinct_id: 'u4' },
  ];
  expect((await sendNext({ items })).statusCode).toBe(202);
  expect(await sample('inlet_items_total', { outcome: 'accepted' })).toBe(before.accepted + 2);
  expect(await sample('inlet_items_dropped_total', { reason: 'bot_filtered' })).toBe(1);
  expect(await sample('inlet_items_refused_total', { code: 'missing_event_name' })).toBe(1);
  expect(await sample('inlet_http_requests_total', { route: '/api/*', method: 'POST', status: '202' })).toBe(before.ok + 1);

  expect((await sendNext({ items: items.slice(0, 2) })).statusCode).toBe(202);
  expect(await sample('inlet_items_total', { outcome: 'duplicate' })).toBe(2);
  expect(await sample('inlet_items_total', { outcome: 'accepted' })).toBe(before.accepted + 2);

  // A dry run stores nothing and counts no items.
  expect((await sendNext({ items: [{ event: 'e', distinct_id: 'u9' }] }, { query: 'validate=true' })).statusCode).toBe(200);
  expect(await sample('inlet_items_total', { outcome: 'accepted' })).toBe(before.accepted + 2);

  // A request refused whole still counts its invalid items by code.
  expect((await sendNext({ items: [{ event: '$bad', distinct_id: 'u' }] })).statusCode).toBe(400);
  expect(await sample('inlet_items_refused_total', { code: 'reserved_event_name' })).toBe(1);
  expect(await sample('inlet_http_requests_total', { route: '/api/*', status: '400' })).toBe(1);
});

it('counts commits, their size and duration, key lookups, rate-limit refusals and 404s', async () => {
  expect(await sample('inlet_commit_requests_count')).toBeGreaterThanOrEqual(1);
  expect(await sample('inlet_commit_items_sum')).toBeGreaterThanOrEqual(4);
  expect(await sample('inlet_commit_duration_seconds_count')).toBe(await sample('inlet_commit_requests_count'));
  expect(await sample('inlet_commit_failures_total')).toBe(0);

  const found = await sample('inlet_key_lookups_total', { result: 'found' });
  await send({ ...f, key: `srv_live_${'Q'.repeat(32)}` }, { items: [] });
  expect(await sample('inlet_key_lookups_total', { result: 'not_found' })).toBe(1);

  // Two requests within one second on a key allowed one per second.
  clock.advance(1001);
  await send(f, { items: [{ event: 'e', distinct_id: 'u' }] });
  const limited = await send(f, { items: [{ event: 'e', distinct_id: 'u' }] });
  expect(limited.statusCode).toBe(429);
  expect(await sample('inlet_rate_limited_requests_total', { policy: 'key' })).toBe(1);
  expect(await sample('inlet_rate_limited_requests_total', { policy: 'burst' })).toBe(0);
  expect(await sample('inlet_key_lookups_total', { result: 'found' })).toBe(found + 2);

  expect((await f.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(404);
  expect(await sample('inlet_http_requests_total', { route: 'none', method: 'GET', status: '404' })).toBe(1);
  expect(await sample('inlet_body_bytes', { state: 'admitted' })).toBe(0);
  expect(await sample('inlet_body_bytes', { state: 'waiting' })).toBe(0);
  expect(await sample('process_resident_memory_bytes')).toBeGreaterThan(0);
  // A live gauge has no value to expect: the scrape carries it, as a number.
  expect(Number.isFinite(await sample('nodejs_eventloop_lag_seconds'))).toBe(true);
});

it('counts a client that goes away before its answer', async () => {
  const port = await publicPort();
  const before = await sample('inlet_client_aborts_total');
  // The server has the request once its headers are parsed; then the client goes.
  clock.advance(1001);
  const arrived = new Promise((r) => f.app.server.once('request', r));
  const socket = net.connect(Number(port), '127.0.0.1');
  socket.on('error', () => {});
  // Headers and part of the body; the rest never comes.
  socket.write(`POST /api/v1/batch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${f.key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"items": [`);
  await arrived;
  const counted = new Promise<void>((resolve) => {
    const inc = metrics.clientAborts.inc.bind(metrics.clientAborts);
    metrics.clientAborts.inc = ((...args: never[]) => {
      (inc as (...a: never[]) => void)(...args);
      resolve();
    }) as typeof inc;
  });
  socket.destroy();
  await counted;
  expect(await sample('inlet_client_aborts_total')).toBe(before + 1);
});

it('HTTP-level refusals are missing from the metrics: a bad method, headers too large and a client gone mid-body are each counted once', async () => {
  const port = await publicPort();
  const refused = (status: string) => sample('inlet_http_requests_total', { route: 'http', method: 'none', status }).catch(() => 0);
  const before = { bad: await refused('400'), big: await refused('431'), gone: await sample('inlet_client_aborts_total') };
  expect((await rawRequest(port, 'M1 /x HTTP/1.1\r\nHost: x\r\n\r\n').answer).status).toBe(400);
  expect((await rawRequest(port, `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`).answer).status).toBe(431);
  expect(await refused('400')).toBe(before.bad + 1);
  expect(await refused('431')).toBe(before.big + 1);

  // Mid-body both the failed read and Fastify's abort hook see the client go: one count.
  clock.advance(1001);
  const arrived = new Promise((r) => f.app.server.once('request', r));
  const c = rawRequest(port, `POST /api/v1/batch HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${f.key}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"items": [`);
  await arrived;
  let noticed = 0;
  const countGone = counters.countGone.bind(counters);
  counters.countGone = (request) => (noticed++, countGone(request));
  c.socket.destroy();
  while (noticed < 2) await new Promise((r) => setImmediate(r));
  counters.countGone = countGone;
  expect(await sample('inlet_client_aborts_total')).toBe(before.gone + 1);
});

it('answers 404 on anything but GET /metrics', async () => {
  const res = await fetch(`http://127.0.0.1:${metricsPort(listener)}/`);
  expect(res.status).toBe(404);
});
