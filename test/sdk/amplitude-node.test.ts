/**
 * The real @amplitude/analytics-node from npm, pointed at a real server by its
 * serverUrl only: track, identify (set, setOnce, unset), groupIdentify and
 * setGroup land as the rules say; a refused event's promise reports it while
 * the SDK sends the rest again (stored once, by its own insert_id); a key over
 * its rate is answered 429 and the SDK's retry gets through.
 */
import { Identify, Types, createInstance } from '@amplitude/analytics-node';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { FaultProxy } from '../helpers/http-fault-proxy.js';
import { type LiveServer, startLiveServer } from '../helpers/live-server.js';

let live: LiveServer;
beforeAll(async () => {
  live = await startLiveServer();
});
afterAll(async () => live.stop());

async function client(path = '/2/httpapi', options: Types.NodeOptions = {}) {
  const amp = createInstance();
  await amp.init(live.key, { serverUrl: `${live.url}${path}`, flushIntervalMillis: 20, flushQueueSize: 50, logLevel: Types.LogLevel.None, ...options }).promise;
  return amp;
}

it('analytics-node, through its own code: track, identify, groupIdentify, setGroup; a refused event reported, the rest resent and stored once', async () => {
  const amp = await client('/2/batch');
  const user = { user_id: 'amp_sdk_user', device_id: 'amp-device-1' };
  const first = await amp.identify(new Identify().set('plan', 'team').set('temp', 1).setOnce('first_plan', 'free'), user).promise;
  expect(first.code).toBe(200);
  const results = await Promise.all([
    amp.track('ordered', { total: 30 }, user).promise,
    amp.track('$reserved', { x: 1 }, user).promise,
    amp.track('viewed', { page: 'home' }, user).promise,
    amp.identify(new Identify().unset('temp').setOnce('first_plan', 'pro'), user).promise,
    amp.groupIdentify('company', 'acme', new Identify().set('seats', 40), user).promise,
    amp.setGroup('company', 'acme', user).promise,
  ]);
  expect(results.map((r) => r.code)).toEqual([200, 400, 200, 200, 200, 200]);
  expect(results[1]!.message).toMatch(/^reserved_event_name: /);
  await amp.flush().promise;

  const events = (await live.events(1000)).filter((e) => e.distinct_id === 'amp_sdk_user');
  expect(events.map((e) => e.event).sort()).toEqual(['ordered', 'viewed']);
  const ordered = events.find((e) => e.event === 'ordered')!;
  expect(ordered.properties).toMatchObject({ total: 30 });
  expect(ordered.insert_id).toMatch(/^[0-9a-f-]{36}$/);
  for (const k of ['library', 'platform', 'os_name', 'plan']) expect(ordered.properties).not.toHaveProperty(k);

  const person = await live.person('amp_sdk_user');
  expect(person.traits).toEqual({ plan: 'team', first_plan: 'free', company: 'acme' });
  expect(person.groups).toEqual([{ group_type: 'company', group_key: 'acme' }]);
  expect(await live.group('company', 'acme')).toMatchObject({ traits: { seats: 40 } });
});

it('analytics-node pointed at /batch, Amplitude\'s batch API path, which PostHog\'s route also owns: its bodies are Amplitude\'s there', async () => {
  const amp = await client('/batch', { useBatch: true });
  const user = { user_id: 'amp_batch_user' };
  const results = await Promise.all([amp.track('paid', { total: 3 }, user).promise, amp.track('$reserved', {}, user).promise]);
  expect(results.map((r) => r.code)).toEqual([200, 400]);
  expect(results[1]!.message).toMatch(/^reserved_event_name: /);
  const events = (await live.events(1000)).filter((e) => e.distinct_id === 'amp_batch_user');
  expect(events.map((e) => e.event)).toEqual(['paid']);
});

it('analytics-node: a wrong key is reported at once, in its words', async () => {
  const amp = createInstance();
  await amp.init('srv_live_00000000000000000000000000000000', { serverUrl: `${live.url}/2/httpapi`, flushIntervalMillis: 20, logLevel: Types.LogLevel.None }).promise;
  const r = await amp.track('x', {}, { user_id: 'amp_sdk_2' }).promise;
  expect(r).toMatchObject({ code: 400, message: expect.stringMatching(/^Invalid API key: /) });
});

it('analytics-node: a batch over 1 MiB is answered 413 and the SDK halves it until it fits, each event stored once', async () => {
  const proxy = await FaultProxy.start(live.url);
  try {
    const amp = createInstance();
    // Its timer flushes: all 160 are queued by then and go as one batch first (flush() would send without its retries).
    await amp.init(live.key, { serverUrl: `${proxy.url}/2/batch`, flushQueueSize: 200, flushIntervalMillis: 1_500, logLevel: Types.LogLevel.None }).promise;
    const pad = 'x'.repeat(7_000);
    const sent = Array.from({ length: 160 }, (_, i) => amp.track('padded', { i, pad }, { user_id: 'amp_sdk_big' }).promise);
    const results = await Promise.all(sent);
    expect(new Set(results.map((r) => r.code))).toEqual(new Set([200]));
  } finally {
    await proxy.close();
  }
  // The 160 events (about 1.1 MB) went as one batch first, then in halves.
  expect(proxy.log[0]).toMatchObject({ upstream: 413 });
  expect(proxy.upstreamCount(200)).toBeGreaterThanOrEqual(2);
  expect((await live.events(1000)).filter((e) => e.distinct_id === 'amp_sdk_big')).toHaveLength(160);
});

it('analytics-node: a key over its rate is answered 429 with Retry-After, and the SDK\'s retry gets through', async () => {
  const limited = await startLiveServer({ INLET_LIMIT_KEY_RPS: '1' });
  try {
    const amp = createInstance();
    await amp.init(limited.key, { serverUrl: `${limited.url}/2/httpapi`, flushIntervalMillis: 300, flushQueueSize: 1, logLevel: Types.LogLevel.None }).promise;
    const results = await Promise.all([1, 2, 3].map((n) => amp.track('tick', { n }, { user_id: 'amp_sdk_rl' }).promise));
    expect(results.map((r) => r.code)).toEqual([200, 200, 200]);
    const raw = await fetch(`${limited.url}/2/httpapi`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: limited.key, events: [{ event_type: 'a', user_id: 'u' }] }) });
    const again = await fetch(`${limited.url}/2/httpapi`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ api_key: limited.key, events: [{ event_type: 'b', user_id: 'u' }] }) });
    expect([raw.status, again.status]).toContain(429);
    const refused = raw.status === 429 ? raw : again;
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await refused.json()).toEqual({ code: 429, error: expect.stringMatching(/^rate_limited: /) });
    expect((await limited.events(100)).filter((e) => e.event === 'tick')).toHaveLength(3);
  } finally {
    await limited.stop();
  }
});
