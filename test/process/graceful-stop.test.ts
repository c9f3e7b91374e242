import { afterAll, expect, it } from 'vitest';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { tempDir } from '../helpers/fixture.js';
import { provision, startServer } from '../helpers/process.js';

const tmp = tempDir('inlet-stop-');
afterAll(() => tmp.remove());

it('SIGTERM finishes the requests in flight, commits them, and exits 0', async () => {
  const { source, key } = await provision({}, tmp.dir);
  const server = await startServer(['--data-dir', tmp.dir]);
  const big = (r: number) => ({ items: Array.from({ length: 500 }, (_, i) => ({ event: 'stop_test', distinct_id: `u${i}`, insert_id: `r${r}_${i}`, properties: { pad: 'x'.repeat(300) } })) });
  const inFlight = Array.from({ length: 8 }, (_, r) =>
    fetch(`${server.url}/api/v1/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(big(r)),
    }).then(async (res) => ({ status: res.status, body: await res.json() })),
  );
  // Ask it to stop while it handles them: once the first answer is back, the
  // server has the requests and the rest are in flight. (A fixed wait was
  // sometimes too short on a loaded machine, before any request got there.)
  await Promise.race(inFlight);
  server.proc.kill('SIGTERM');
  const answers = await Promise.allSettled(inFlight);
  expect(await server.exited).toBe(0);
  const ok = answers.filter((a) => a.status === 'fulfilled' && a.value.status === 202).length;
  const store = SqliteStore.open(tmp.dir);
  const stored = (await store.listEvents(source.id, 100_000)).length;
  await store.close();
  console.log(`graceful stop: ${ok} of 8 requests answered 202 (SIGTERM went out after the first answer), ${stored} events stored`);
  expect(ok).toBeGreaterThan(0);
  expect(stored).toBe(ok * 500);
});
