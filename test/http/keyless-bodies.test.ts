/**
 * Bodies whose key is inside them (Segment's writeKey, PostHog's api_key):
 * anyone can send one, so the main thread never decompresses or parses one;
 * check threads do, within a budget of their own that a flood of them cannot
 * pass, and bodies with their key in a header are answered meanwhile.
 */
import { Worker } from 'node:worker_threads';
import { gzipSync } from 'node:zlib';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CheckThreads, KEYLESS_WAITING, OFF_THREAD_MIN_BYTES } from '../../src/intakes/check-threads.js';
import { type Fixture, makeFixture } from '../helpers/fixture.js';

/** The main thread's parses and decompressions, counted: a check thread loads its own copies of these modules. */
const onMain = vi.hoisted(() => ({ parses: 0, gunzips: 0 }));
vi.mock('../../src/pipeline/parse-body.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/pipeline/parse-body.js')>();
  return {
    ...real,
    parseJsonBody: (bytes: Uint8Array) => (onMain.parses++, real.parseJsonBody(bytes)),
  };
});
vi.mock('node:zlib', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:zlib')>();
  return {
    ...real,
    gunzip: (...args: Parameters<typeof real.gunzip>) => (onMain.gunzips++, real.gunzip(...args)),
    gunzipSync: (...args: Parameters<typeof real.gunzipSync>) => (onMain.gunzips++, real.gunzipSync(...args)),
  };
});

let f: Fixture;
let threads: CheckThreads;
afterEach(async () => {
  await threads.close();
  await f.close();
});

const capture = (uuid: string) => ({ event: 'paid', distinct_id: 'u1', uuid, properties: { $lib: 'posthog-node', note: 'x'.repeat(40) } });

function post(path: string, payload: string | Buffer, headers: Record<string, string> = {}, remoteAddress = '10.0.0.1') {
  return f.app.inject({ method: 'POST', url: path, headers: { 'content-type': 'application/json', ...headers }, payload, remoteAddress });
}

describe('keyless-bodies-parsed-on-main-thread', () => {
  for (const set of [0, 1]) {
    it(`a body with its key inside, or none, is never decompressed or parsed on the main thread (${set} check threads set)`, async () => {
      threads = new CheckThreads(set);
      f = await makeFixture({ checks: threads });
      const big = Array.from({ length: 400 }, (_, i) => capture(`big-${i}`));
      expect(JSON.stringify(big).length).toBeGreaterThan(OFF_THREAD_MIN_BYTES);
      const sent: [string, string | Buffer, Record<string, string>, number][] = [
        ['/batch/', JSON.stringify({ batch: [capture('none')] }), {}, 401],
        ['/batch/', JSON.stringify({ api_key: 'srv_live_00000000000000000000000000000000', batch: [capture('bad')] }), {}, 401],
        ['/batch/', '{"api_key": "', {}, 401],
        ['/batch/', gzipSync(JSON.stringify({ batch: [capture('z-none')] })), { 'content-encoding': 'gzip' }, 401],
        ['/batch/', gzipSync(Buffer.alloc(2 * 1_048_576, 0x20)), { 'content-encoding': 'gzip' }, 413],
        ['/e/?compression=gzip-js', gzipSync('{nope'), {}, 401],
        ['/v1/track', JSON.stringify({ event: 'paid', userId: 'u1' }), {}, 401],
        ['/batch/', JSON.stringify({ api_key: f.key, batch: [capture('ok-1')] }), {}, 200],
        ['/batch/', gzipSync(JSON.stringify({ api_key: f.key, batch: [capture('ok-2')] })), { 'content-encoding': 'gzip' }, 200],
        ['/batch/', JSON.stringify({ api_key: f.key, batch: big }), {}, 200],
        ['/v1/batch', JSON.stringify({ writeKey: f.key, batch: [{ type: 'track', event: 'paid', userId: 'u1' }] }), {}, 200],
      ];
      for (const [path, payload, headers, status] of sent) {
        const res = await post(path, payload, headers);
        expect(res.statusCode, `${path}: ${res.body}`).toBe(status);
      }
      expect(onMain).toEqual({ parses: 0, gunzips: 0 });
      expect(threads.keylessStats).toEqual({ read: sent.length, refused: 0 });
      expect((await f.collector.store.listEvents(f.sourceId, 1000)).length).toBe(2 + big.length + 1);

      // The count sees the main thread's parses: a small body with its key in a header is parsed here.
      const bearer = await post('/batch/', JSON.stringify({ batch: [capture('hdr')] }), { authorization: `Bearer ${f.key}` });
      expect(bearer.statusCode, bearer.body).toBe(200);
      expect(onMain.parses).toBe(1);
      onMain.parses = 0;
    });
  }

  it('a flood of bodies without a key holds at most its own budget: past it they are answered 503, and a key in a header is answered meanwhile', async () => {
    // A thread that never answers: every body sent to it stays there.
    threads = new CheckThreads(1, { newWorker: () => new Worker('setInterval(() => {}, 1000)', { eval: true }) });
    f = await makeFixture({ checks: threads });
    const flood = Array.from({ length: 1 + KEYLESS_WAITING }, (_, i) => post('/batch/', JSON.stringify({ batch: [capture(`f-${i}`)] }), {}, `10.0.${i >> 2}.${i & 3}`));
    await vi.waitFor(() => expect(threads.keylessInHand).toEqual({ running: 1, waiting: KEYLESS_WAITING }));
    const over = await post('/batch/', JSON.stringify({ batch: [capture('over')] }), {}, '10.9.9.9');
    expect(over.statusCode).toBe(503);
    expect(over.json().error).toMatchObject({ code: 'collection_unavailable', message: expect.stringContaining('Authorization header') });
    expect(over.headers['retry-after']).toBe('5');

    const keyed = await post('/batch/', JSON.stringify({ batch: [capture('keyed')] }), { authorization: `Bearer ${f.key}` });
    expect(keyed.statusCode, keyed.body).toBe(200);
    expect(onMain.parses).toBe(1);
    onMain.parses = 0;

    // The flood's bodies were never read here: stopped, the thread leaves them refused.
    await threads.close();
    for (const res of await Promise.all(flood)) expect(res.statusCode).toBe(503);
    expect(onMain).toEqual({ parses: 0, gunzips: 0 });
    expect(threads.keylessStats).toEqual({ read: 0, refused: 2 + KEYLESS_WAITING });
  });
});
