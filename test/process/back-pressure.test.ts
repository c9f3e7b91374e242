import { afterAll, expect, it } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { provision, startServer, stopServer } from '../helpers/process.js';

const tmp = tempDir('inlet-back-pressure-');
afterAll(() => tmp.remove());

it('serve takes its back-pressure settings from INLET_BODY_BUDGET_BYTES and INLET_BODY_WAIT_MS', async () => {
  const { key } = await provision({}, tmp.dir);
  // Room for one body at a time, and no waiting: overlapping requests are told to come back.
  const server = await startServer(['--data-dir', tmp.dir], { INLET_BODY_BUDGET_BYTES: '1', INLET_BODY_WAIT_MS: '0' });
  try {
    const batch = (r: number) => ({ items: Array.from({ length: 500 }, (_, i) => ({ event: 'e', distinct_id: `u${i}`, insert_id: `r${r}_${i}` })) });
    const answers = await Promise.all(
      Array.from({ length: 12 }, async (_, r) => {
        const res = await fetch(`${server.url}/api/v1/batch`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key.key}`, 'content-type': 'application/json' },
          body: JSON.stringify(batch(r)),
        });
        const body = (await res.json()) as { error?: { code: string } };
        return { status: res.status, code: body.error?.code, retryAfter: res.headers.get('retry-after') };
      }),
    );
    const refused = answers.filter((a) => a.status === 503);
    expect(answers.filter((a) => a.status === 202).length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.every((a) => a.code === 'collection_unavailable' && a.retryAfter === '5')).toBe(true);
    expect(answers.length).toBe(refused.length + answers.filter((a) => a.status === 202).length);
  } finally {
    await stopServer(server);
  }
});
