import { setTimeout as delay } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Inlet, type InletOptions, type RetryInfo } from '../../sdk/node/src/index.js';
import { type LiveServer, startLiveServer } from '../helpers/live-server.js';
import { withAdmin } from '../helpers/process.js';

let run = 0;

/** Sends `count` items in a plain loop, as fast as the caller can, then flushes; the retries it met, and the report. */
async function sendAll(live: LiveServer, count: number, opts: Partial<InletOptions> = {}) {
  const retries: RetryInfo[] = [];
  const inlet = new Inlet({ key: live.key, baseUrl: live.url, onRetry: (r) => retries.push(r), ...opts });
  const prefix = `paced_${++run}`;
  for (let i = 0; i < count; i++) inlet.track({ event: 'e', distinctId: 'u', insertId: `${prefix}_${i}` });
  const report = await inlet.close({ timeoutMs: 120_000 });
  return { report, rateLimited: retries.filter((r) => r.status === 429).length };
}

/**
 * The two suites run side by side, each on a server of its own: the second
 * mostly waits for its windows to pass. The first one's tests stay one after
 * the other: each of their clients must go as fast as it can, not share its
 * server with the other.
 */
describe.concurrent('pacing within the server limits', () => {
  let live: LiveServer;
  beforeAll(async () => {
    live = await startLiveServer();
  });
  afterAll(async () => live.stop());

  it.sequential('a default client sending 30,000 items as fast as it can against default limits is never answered 429', async () => {
    const { report, rateLimited } = await sendAll(live, 30_000);
    expect(rateLimited).toBe(0);
    expect(report).toMatchObject({ accepted: 30_000, failed: 0 });
  });

  it.sequential('small batches sent as fast as they come keep under the per-key requests per second, so none is answered 429', async () => {
    // 300 requests: with two in flight and no pacing, far more than 100 a second reach the server.
    // A key of its own: the previous test's client may have used the shared key's last second, and this client cannot know.
    const { key } = await withAdmin(live.env, undefined, (admin) => admin.createKey(live.sourceId));
    const { report, rateLimited } = await sendAll(live, 3000, { flushAt: 10, key });
    expect(rateLimited).toBe(0);
    expect(report).toMatchObject({ accepted: 3000, failed: 0 });
  });
});

/**
 * Both tests wait for a 10 s window to pass, mostly idle: they run side by
 * side on one server, each on a project of its own (the windows are per
 * project, so neither counts in the other's).
 */
describe.concurrent('pacing on the RateLimit answers, and when the oldest count in the window is small', () => {
  let live: LiveServer;
  beforeAll(async () => {
    live = await startLiveServer({ INLET_LIMIT_BURST: '1500' });
  });
  afterAll(async () => live.stop());

  it.concurrent('a client that would overrun the burst window waits for it, by the RateLimit header, instead of being answered 429', async ({ expect }) => {
    const { report, rateLimited } = await sendAll(live, 3000);
    expect(rateLimited).toBe(0);
    expect(report).toMatchObject({ accepted: 3000, failed: 0 });
  });

  it.concurrent('a trickle and then a job from one client are never answered 429 when the trickle is the oldest count in the window', async ({ expect }) => {
    const key: string = await withAdmin(live.env, undefined, async (admin) => {
      const project = await admin.createProject({ name: 'Trickle', apiEnabled: true });
      return (await admin.createKey((await admin.createSource({ projectId: project.id, name: 'Backend' })).id)).key;
    });
    // The trickle's two items leave the 10 s window first: room for two items then, not for a batch.
    const retries: RetryInfo[] = [];
    const inlet = new Inlet({ key, baseUrl: live.url, onRetry: (r) => retries.push(r) });
    for (let i = 0; i < 2; i++) inlet.track({ event: 'e', distinctId: 'u', insertId: `trickle_${i}` });
    expect(await inlet.flush()).toMatchObject({ accepted: 2, failed: 0 });
    // The gap is the scenario, not a wait for an event: the job's batches must enter the window well after the trickle.
    await delay(3000);
    for (let i = 0; i < 3000; i++) inlet.track({ event: 'e', distinctId: 'u', insertId: `job_${i}` });
    const report = await inlet.close({ timeoutMs: 120_000 });
    expect(retries.filter((r) => r.status === 429)).toEqual([]);
    expect(report).toMatchObject({ accepted: 3000, failed: 0 });
  });
});
