import { afterEach, expect, it } from 'vitest';
import { type Fixture, makeFixture } from '../helpers/fixture.js';

let f: Fixture;
afterEach(async () => f?.close());

async function listen(): Promise<string> {
  return f.app.listen({ port: 0, host: '127.0.0.1' });
}

function post(url: string, key: string, items: unknown[]) {
  return fetch(`${url}/api/v1/batch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ items }),
  });
}

it('concurrent requests over a socket: exactly the allowed items are admitted, and the meter equals what was stored', async () => {
  f = await makeFixture({ limits: { burst: 1000, keyRps: 0 } });
  const url = await listen();
  const answers = await Promise.all(
    Array.from({ length: 40 }, (_, r) =>
      post(url, f.key, Array.from({ length: 50 }, (_, i) => ({ event: 'e', distinct_id: `u${i}`, insert_id: `r${r}_${i}` }))),
    ),
  );
  const statuses = answers.map((a) => a.status);
  expect(statuses.filter((s) => s === 202)).toHaveLength(20);
  expect(statuses.filter((s) => s === 429)).toHaveLength(20);
  for (const a of answers) if (a.status === 429) expect(a.headers.get('retry-after')).toBe('10');
  const stored = await f.collector.store.listEvents(f.sourceId, 10_000);
  expect(stored).toHaveLength(1000);
  expect(await f.collector.store.usage(f.projectId, '2026-11')).toBe(1000);
});

it('per key, exactly 100 requests in a second get through, whatever arrives at once', async () => {
  f = await makeFixture();
  const url = await listen();
  const answers = await Promise.all(Array.from({ length: 130 }, (_, i) => post(url, f.key, [{ event: 'e', distinct_id: 'u', insert_id: `k${i}` }])));
  const statuses = answers.map((a) => a.status);
  expect(statuses.filter((s) => s === 202)).toHaveLength(100);
  expect(statuses.filter((s) => s === 429)).toHaveLength(30);
  expect(await f.collector.store.usage(f.projectId, '2026-11')).toBe(100);
});
