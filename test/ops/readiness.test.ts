import { afterEach, expect, it } from 'vitest';
import type { Store } from '../../src/stores/port.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { type Fixture, makeFixture, tempDir } from '../helpers/fixture.js';

let f: Fixture | null = null;
let cleanup: (() => void) | null = null;
afterEach(async () => {
  await f?.close();
  cleanup?.();
  f = null;
  cleanup = null;
});

/** A real store whose ping the test decides: answered, refused, or never answered. */
async function withPing(ping: () => Promise<void>): Promise<Fixture> {
  const tmp = tempDir('inlet-ready-');
  cleanup = tmp.remove;
  const real = SqliteStore.open(tmp.dir);
  const store = new Proxy(real, { get: (t, p) => (p === 'ping' ? ping : (Reflect.get(t, p, t) as unknown)) }) as Store;
  f = await makeFixture({ store });
  return f;
}

it('/healthz answers 200 and /readyz 200 while the store answers', async () => {
  f = await makeFixture();
  const health = await f.app.inject({ method: 'GET', url: '/healthz' });
  expect(health.statusCode).toBe(200);
  expect(health.json()).toEqual({ status: 'ok' });
  const ready = await f.app.inject({ method: 'GET', url: '/readyz' });
  expect(ready.statusCode).toBe(200);
  expect(ready.json()).toEqual({ status: 'ready' });
  expect(ready.headers['cache-control']).toBe('no-store');
  expect((await f.app.inject({ method: 'HEAD', url: '/readyz' })).statusCode).toBe(200);
});

it('/readyz answers 503 in our envelope when the store refuses, and when it does not answer within 1 s', async () => {
  for (const ping of [() => Promise.reject(new Error('down')), () => new Promise<void>(() => {})]) {
    const fx = await withPing(ping);
    const res = await fx.app.inject({ method: 'GET', url: '/readyz' });
    expect(res.statusCode).toBe(503);
    expect(res.headers['request-id']).toMatch(/^req_/);
    expect(res.json().error).toMatchObject({
      code: 'collection_unavailable',
      message: expect.stringContaining('the store did not answer a trivial query within 1 s'),
      request_id: res.headers['request-id'],
    });
    // Liveness does not depend on the store: restarting would not bring it back.
    expect((await fx.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    await fx.close();
    cleanup?.();
    f = null;
    cleanup = null;
  }
});

it('/readyz turns 503 as a stop begins, while the API still serves', async () => {
  f = await makeFixture();
  f.app.readiness.beginStop();
  const res = await f.app.inject({ method: 'GET', url: '/readyz' });
  expect(res.statusCode).toBe(503);
  expect(res.json().error.message).toContain('this server is stopping');
  // Requests are still served while readiness is off: the balancer drains first.
  const batch = await f.app.inject({ method: 'POST', url: '/api/v1/batch', headers: { authorization: `Bearer ${f.key}`, 'content-type': 'application/json' }, payload: '{"items":[{"event":"e","distinct_id":"u"}]}' });
  expect(batch.statusCode).toBe(202);
});
