import type { ShownItem } from '../domain/items/enriched-item.js';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { type Admit, type BatchContext, type CheckedBatch, checkBatchBody } from '../pipeline/checked-batch.js';
import { CheckThreads, KEYLESS_WAITING, KEYLESS_WAITING_PER_ADDRESS, OFF_THREAD_MIN_BYTES } from './check-threads.js';
import type { Refusal } from '../domain/intake/refusal.js';

const NOW = Date.UTC(2026, 10, 24, 12);
const CTX: BatchContext = { now: NOW, recordIp: true, source: { id: 'src_1', filterBots: true } };
const BOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';

/** A body of `n` items of every kind (valid, refused, bot), over OFF_THREAD_MIN_BYTES when n is 300. */
function body(n: number, extra: Record<string, unknown> = {}): Buffer {
  const items = Array.from({ length: n }, (_, i) => {
    switch (i % 5) {
      case 0: return { event: 'paid', distinct_id: `u_${i}`, insert_id: `i-${i}`, properties: { $revenue: i / 4, $currency: 'EUR', $ip: '10.0.0.1', note: 'x'.repeat(40) } };
      case 1: return { type: 'identify', distinct_id: `u_${i}`, properties: { email: `u${i}@example.com` } };
      case 2: return { event: 'crawled', distinct_id: `u_${i}`, properties: { $user_agent: BOT } };
      case 3: return { event: '$not_yours', distinct_id: `u_${i}` };
      default: return { event: 'late', distinct_id: `u_${i}`, timestamp: '2001-01-01T00:00:00Z', properties: { a: [1, { b: null }] } };
    }
  });
  return Buffer.from(JSON.stringify({ items, ...extra }));
}

/** A result as plain data, properties parsed: what the route reads of it. */
function plain(r: CheckedBatch | Refusal) {
  if (!('items' in r)) return r;
  const item = (i: ShownItem) => ({ ...i, properties: i.properties });
  return { ...r, items: r.items.map(item), dropped: r.dropped.map((d) => ({ ...d, item: item(d.item) })) };
}

const admitAll: Admit = async () => null;
/** What the main thread makes of a body, as plain data. */
const here = async (b: Buffer) => plain(await checkBatchBody(b, CTX, admitAll));

let threads: CheckThreads | null = null;
afterEach(async () => {
  await threads?.close();
  threads = null;
});

describe('checks on threads', () => {
  it('a small body whose plan is not compiled on the main thread yet goes to a thread, and stays here once it is', async () => {
    threads = new CheckThreads(1);
    const rules = [{ type: 'track', event: 'paid', json_schema: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] } }];
    const ctx: BatchContext = { ...CTX, plan: { key: 'pln_threads@1', rules: JSON.stringify(rules), unplanned: 'refuse' } };
    const small = Buffer.from(JSON.stringify({ items: [{ event: 'paid', distinct_id: 'u', properties: { amount: 'ten' } }, { event: 'unplanned', distinct_id: 'u' }] }));
    expect(small.length).toBeLessThan(OFF_THREAD_MIN_BYTES);
    const first = (await threads.check(small, ctx, admitAll)) as CheckedBatch;
    expect(threads.stats.offThread).toBe(1);
    // The main thread compiled the version after the turn that asked, while the thread answered.
    const second = (await threads.check(small, ctx, admitAll)) as CheckedBatch;
    expect(threads.stats.offThread).toBe(1);
    const codes = (b: CheckedBatch) => b.planFaults!.map((f) => [f.index, f.code, f.field]);
    expect(codes(first)).toEqual([[0, 'plan_violation', 'properties.amount'], [1, 'unplanned_event', 'event']]);
    expect(codes(second)).toEqual(codes(first));
  });

  it('give what the main thread gives, for bodies good and bad', async () => {
    threads = new CheckThreads(2);
    const bodies = [
      body(300),
      body(300, { sent_at: 'now' }),
      body(501),
      Buffer.concat([body(300), Buffer.from('}')]),
      Buffer.from(JSON.stringify({ batch: 'x'.repeat(OFF_THREAD_MIN_BYTES) })),
      Buffer.concat([Buffer.from('{"items":[{"event":"'), Buffer.alloc(OFF_THREAD_MIN_BYTES, 0xff), Buffer.from('"}]}')]),
    ];
    for (const b of bodies) expect(b.length).toBeGreaterThanOrEqual(OFF_THREAD_MIN_BYTES);
    const answers = await Promise.all(bodies.map((b) => threads!.check(b, CTX, admitAll)));
    expect(answers.map(plain)).toEqual(await Promise.all(bodies.map(here)));
    expect(threads.stats).toEqual({ offThread: bodies.length, retried: 0 });
    expect(answers.map((a) => ('code' in a ? a.code : a.items.length))).toEqual([120, 120, 'batch_too_many_items', 'invalid_json', 'invalid_body', 'invalid_json']);
  });

  it('leave small bodies on the main thread', async () => {
    threads = new CheckThreads(1);
    const small = body(3);
    expect(plain(await threads.check(small, CTX, admitAll))).toEqual(await here(small));
    expect(threads.stats.offThread).toBe(0);
  });

  it('prepare compiles a version here and on every thread; a thread started after (as after one that died) compiles it before its first body', async () => {
    const failures: Error[] = [];
    threads = new CheckThreads(2, { heap: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 12 }, onError: (e) => failures.push(e) });
    const plan = { key: 'pln_prepare@1', rules: JSON.stringify([{ type: 'track', event: 'paid', json_schema: { type: 'object' } }]), unplanned: 'refuse' as const };
    await threads.prepare(plan);
    const held = await threads.held();
    expect(held.here).toContain(plan.key);
    expect(held.threads).toHaveLength(2);
    for (const t of held.threads) expect(t).toEqual([plan.key]);
    // A body too large for a thread's heap kills it; the next body starts a new one, which holds the version before it checks anything.
    const huge = Buffer.from(`{"items":[{"event":"e","distinct_id":"u","properties":{"a":[${Array(340_000).fill('{}').join(',')}]}}]}`);
    await threads.check(huge, CTX, admitAll);
    await threads.check(huge, CTX, admitAll);
    expect(failures.length).toBeGreaterThan(0);
    await threads.check(body(300), CTX, admitAll);
    for (const t of (await threads.held()).threads) expect(t).toEqual([plan.key]);
  });

  it('check a body here when its thread dies, and start a new thread for the next', async () => {
    // A heap that takes a 300-item body but not a 1 MiB body of empty objects: ERR_WORKER_OUT_OF_MEMORY.
    // 8 MiB of old space was too tight for the 300 items on a busy machine (the thread died on them too).
    const failures: Error[] = [];
    threads = new CheckThreads(1, { heap: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 12 }, onError: (e) => failures.push(e) });
    const big = body(300);
    const huge = Buffer.from(`{"items":[{"event":"e","distinct_id":"u","properties":{"a":[${Array(340_000).fill('{}').join(',')}]}}]}`);
    expect(plain(await threads.check(big, CTX, admitAll))).toEqual(await here(big));
    expect(plain(await threads.check(huge, CTX, admitAll))).toEqual(await here(huge));
    expect(threads.stats).toEqual({ offThread: 1, retried: 1 });
    expect(failures.map((e) => (e as NodeJS.ErrnoException).code)).toEqual(['ERR_WORKER_OUT_OF_MEMORY']);
    // Sent to the dead thread, it would wait for ever.
    expect(plain(await threads.check(big, CTX, admitAll))).toEqual(await here(big));
    expect(threads.stats).toEqual({ offThread: 2, retried: 1 });
  });

  it('count a body\'s items against the limits here, and answer the limit\'s refusal', async () => {
    threads = new CheckThreads(1);
    const counts: number[] = [];
    const overLimit: Refusal = { code: 'rate_limited', message: 'over' };
    let refuse = true;
    const admit: Admit = async (n) => {
      counts.push(n);
      return refuse ? overLimit : null;
    };
    expect(await threads.check(body(300), CTX, admit)).toBe(overLimit);
    // A body refused whole is never counted.
    expect(await threads.check(Buffer.concat([body(300), Buffer.from(']')]), CTX, admit)).toMatchObject({ code: 'invalid_json' });
    refuse = false;
    expect(plain(await threads.check(body(300), CTX, admit))).toEqual(await here(body(300)));
    expect(counts).toEqual([300, 300]);
    expect(threads.stats).toEqual({ offThread: 3, retried: 0 });
  });

  it('check bodies here while a thread cannot start, and try to start one again later', async () => {
    const failures: Error[] = [];
    let starts = 0;
    let now = 1_000_000;
    threads = new CheckThreads(2, {
      clock: () => now,
      onError: (e) => failures.push(e),
      newWorker: () => {
        starts++;
        throw Object.assign(new Error('EAGAIN'), { code: 'ERR_WORKER_INIT_FAILED' });
      },
    });
    const big = body(300);
    const answers = await Promise.all([1, 2, 3].map(() => threads!.check(big, CTX, admitAll)));
    for (const a of answers) expect(plain(a)).toEqual(await here(big));
    // One try per slot, not one per body.
    expect(starts).toBe(2);
    expect(failures.map((e) => (e as NodeJS.ErrnoException).code)).toEqual(['ERR_WORKER_INIT_FAILED', 'ERR_WORKER_INIT_FAILED']);
    expect(threads.stats).toEqual({ offThread: 0, retried: 3 });
    now += 999;
    await threads.check(big, CTX, admitAll);
    expect(starts).toBe(2);
    now += 1;
    expect(plain(await threads.check(big, CTX, admitAll))).toEqual(await here(big));
    expect(starts).toBe(4);
    expect(threads.stats).toEqual({ offThread: 0, retried: 5 });
  });

  it('do not start a thread again for every body when it fails as it loads', async () => {
    let starts = 0;
    const now = 1_000_000;
    threads = new CheckThreads(1, {
      clock: () => now,
      newWorker: () => {
        starts++;
        return new Worker('throw new Error("fails as it loads")', { eval: true });
      },
    });
    const big = body(300);
    expect(plain(await threads.check(big, CTX, admitAll))).toEqual(await here(big));
    expect(plain(await threads.check(big, CTX, admitAll))).toEqual(await here(big));
    expect(starts).toBe(1);
    expect(threads.stats).toEqual({ offThread: 0, retried: 2 });
  });

  it('still answer bodies in flight when closed, and every body after', async () => {
    threads = new CheckThreads(1);
    const big = body(300);
    const pending = threads.check(big, CTX, admitAll);
    await threads.close();
    expect(plain(await pending)).toEqual(await here(big));
    expect(plain(await threads.check(big, CTX, admitAll))).toEqual(await here(big));
    expect(threads.stats.offThread + threads.stats.retried).toBe(1);
  });
});

describe('bodies with the key inside', () => {
  const shape = { intake: 'posthog' } as const;
  const keyed = Buffer.from(JSON.stringify({ api_key: 'srv_live_x', batch: [{ event: 'e', distinct_id: 'u' }] }));

  it('have their key found on a thread, even with no threads set, and never here', async () => {
    threads = new CheckThreads(0);
    expect(await threads.findKey(keyed, false, shape, '10.0.0.1')).toMatchObject({ key: { kind: 'token', token: 'srv_live_x' } });
    expect(threads.keylessStats).toEqual({ read: 1, refused: 0 });
    // Bodies with the key in a header stay here with no threads set.
    expect(plain(await threads.check(body(300), CTX, admitAll))).toEqual(await here(body(300)));
    expect(threads.stats).toEqual({ offThread: 0, retried: 0 });
  });

  it('wait for a thread within their own budget, and are answered 503 past it, not read here', async () => {
    // A thread that never answers: every body sent to it waits.
    threads = new CheckThreads(1, { newWorker: () => new Worker('setInterval(() => {}, 1000)', { eval: true }) });
    const first = threads.findKey(keyed, false, shape, '10.0.0.1');
    const waiting = Array.from({ length: KEYLESS_WAITING_PER_ADDRESS }, () => threads!.findKey(keyed, false, shape, '10.0.0.1'));
    expect(await threads.findKey(keyed, false, shape, '10.0.0.1')).toMatchObject({ code: 'collection_unavailable' });
    const others = Array.from({ length: KEYLESS_WAITING - KEYLESS_WAITING_PER_ADDRESS }, (_, i) => threads!.findKey(keyed, false, shape, `10.0.1.${i}`));
    expect(await threads.findKey(keyed, false, shape, '10.0.2.1')).toMatchObject({ code: 'collection_unavailable' });
    expect(threads.keylessStats).toEqual({ read: 0, refused: 2 });
    // Closed, the thread stops: the bodies waiting on it are refused, not read here.
    await threads.close();
    for (const r of await Promise.all([first, ...waiting, ...others])) expect(r).toMatchObject({ code: 'collection_unavailable' });
    expect(threads.stats).toEqual({ offThread: 0, retried: 0 });
  });
});
