import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ClosedError, Inlet, type InletOptions, type ItemResult, QueueFullError, type RetryInfo } from '../../sdk/node/src/index.js';
import { FaultProxy } from '../helpers/http-fault-proxy.js';
import { type LiveServer, startLiveServer } from '../helpers/live-server.js';

let live: LiveServer;
let proxy: FaultProxy;
const clients: Inlet[] = [];
let run = 0;

beforeAll(async () => {
  // Limits off: these tests send in bursts on purpose.
  live = await startLiveServer({ INLET_LIMIT_BURST: '0', INLET_LIMIT_SUSTAINED: '0', INLET_LIMIT_KEY_RPS: '0' });
});
afterAll(async () => live.stop());
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close({ timeoutMs: 0 })));
  await proxy?.close();
});

async function client(opts: Partial<InletOptions> = {}): Promise<Inlet> {
  proxy = await FaultProxy.start(live.url);
  // Millisecond backoffs: the retry logic is the same, the test does not wait on it.
  const c = new Inlet({ key: live.key, baseUrl: proxy.url, retryBaseMs: 1, retryMaxMs: 5, ...opts });
  clients.push(c);
  return c;
}

/** insert_ids unique to this test run, so tests sharing the server never collide. */
const ids = (n: number, prefix: string) => Array.from({ length: n }, (_, i) => `${prefix}_${++run}_${i}`);

describe('delivery through a faulty network', () => {
  it('after flush() every item is stored exactly once and the report accounts for every item', async () => {
    const inlet = await client({ flushAt: 50 });
    proxy.faults.push('lose-answer', { status: 503, retryAfter: '0' }, 'reset', { status: 429, retryAfter: '0' }, 'lose-answer', 'reset', { status: 502 }, 'lose-answer');
    const insertIds = ids(600, 'faulty');
    for (const insertId of insertIds) inlet.track({ event: 'invoice_paid', distinctId: 'cust_1', insertId, properties: { amount: 1 } });
    const report = await inlet.flush();

    expect(report.accepted + report.duplicates).toBe(600);
    expect(report).toMatchObject({ dropped: 0, refused: 0, failed: 0 });
    // Answers lost after the server stored the batch come back as duplicates on the retry.
    expect(report.duplicates).toBeGreaterThan(0);
    expect(report.duplicateItems.every((d) => insertIds.includes(d.insertId) && d.attempts > 1)).toBe(true);
    expect(proxy.log.filter((l) => l.fault === 'lose-answer' && l.upstream === 202)).toHaveLength(3);

    const stored = (await live.events(5000)).map((e) => e.insert_id).filter((id) => id !== null && insertIds.includes(id));
    expect(stored).toHaveLength(600);
    expect(new Set(stored).size).toBe(600);
  });

  it('generates a valid insert_id when none is given and keeps it on every attempt', async () => {
    const results: ItemResult[] = [];
    const inlet = await client({ onResult: (r) => results.push(r) });
    proxy.faults.push('lose-answer', 'lose-answer');
    inlet.track({ event: 'signed_up', distinctId: `u_gen_${++run}` });
    const report = await inlet.flush();
    expect(report.duplicates).toBe(1);
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ outcome: 'duplicate', attempts: 3 });
    expect(results[0]!.insertId).toMatch(/^[A-Za-z0-9_-]{1,80}$/);
    const stored = (await live.events(5000)).filter((e) => e.insert_id === results[0]!.insertId);
    expect(stored).toHaveLength(1);
  });

  it('honours Retry-After: the wait before the retry is never shorter', async () => {
    const retries: RetryInfo[] = [];
    const inlet = await client({ onRetry: (r) => retries.push(r) });
    proxy.faults.push({ status: 429, retryAfter: '1' });
    inlet.track({ event: 'e', distinctId: 'u', insertId: ids(1, 'ra')[0] });
    const report = await inlet.flush();
    expect(report.accepted).toBe(1);
    expect(retries).toEqual([expect.objectContaining({ attempt: 1, status: 429, code: 'injected' })]);
    expect(retries[0]!.waitMs).toBeGreaterThanOrEqual(1000);
  });

  it('splits a batch over the request limit in halves before sending it, until every part fits', async () => {
    const inlet = await client({ flushAt: 300 });
    const insertIds = ids(300, 'big');
    // About 7 KB each: 300 of them are about 2 MB, twice the request limit.
    for (const insertId of insertIds) inlet.track({ event: 'export_done', distinctId: 'u', insertId, properties: { blob: `${insertId}:${'x'.repeat(7000)}` } });
    const report = await inlet.flush();
    expect(report.accepted).toBe(300);
    expect(proxy.log.length).toBeGreaterThanOrEqual(3);
    expect(proxy.upstreamCount(413)).toBe(0);
    const stored = new Set((await live.events(5000)).map((e) => e.insert_id));
    expect(insertIds.every((id) => stored.has(id))).toBe(true);
  });

  it('splits a batch the server answers 413 in halves and sends each', async () => {
    const inlet = await client({ flushAt: 10 });
    proxy.faults.push({ status: 413 }, { status: 413 });
    const insertIds = ids(10, 'half');
    for (const insertId of insertIds) inlet.track({ event: 'e', distinctId: 'u', insertId });
    const report = await inlet.flush();
    expect(report.accepted).toBe(10);
    // 10 refused, then its first half of 5 refused, then 3 + 2, then the second half of 5.
    expect(proxy.log.map((l) => (typeof l.fault === 'object' ? l.fault.status : l.upstream))).toEqual([413, 413, 202, 202, 202]);
  });

  it('reports refused items with their errors and dropped items with their reason; the rest are stored (plain JSON bodies)', async () => {
    const inlet = await client({ gzip: false });
    const [good, bad, bot] = ids(3, 'mixed');
    inlet.track({ event: 'ok', distinctId: 'u', insertId: good });
    inlet.track({ event: '$not_allowed', distinctId: 'u', insertId: bad });
    inlet.track({ event: 'crawl', distinctId: 'u', insertId: bot, properties: { $user_agent: 'Googlebot/2.1 (+http://www.google.com/bot.html)' } });
    const report = await inlet.flush();
    expect(report).toMatchObject({ accepted: 1, refused: 1, dropped: 1, failed: 0, duplicates: 0 });
    expect(report.refusedItems).toEqual([{ outcome: 'refused', insertId: bad, attempts: 1, errors: [expect.objectContaining({ code: 'reserved_event_name', field: 'event' })] }]);
    expect(report.droppedItems).toEqual([{ outcome: 'dropped', insertId: bot, attempts: 1, reason: 'bot_filtered' }]);
  });

  it('a batch in which every item is invalid (400 all_items_invalid) reports each item refused', async () => {
    const inlet = await client();
    const [a, b] = ids(2, 'allbad');
    inlet.track({ event: '', distinctId: 'u', insertId: a });
    inlet.identify({ distinctId: 'null', insertId: b });
    const report = await inlet.flush();
    expect(report.refused).toBe(2);
    expect(report.refusedItems.map((r) => [r.insertId, r.errors[0]!.code])).toEqual([
      [a, 'invalid_event_name'],
      [b, 'invalid_distinct_id'],
    ]);
  });

  it('a request refused whole (a wrong key) fails every item at once with its status and code, without retrying', async () => {
    const inlet = await client({ key: 'srv_live_00000000000000000000000000000000' });
    inlet.track({ event: 'e', distinctId: 'u' });
    inlet.identify({ distinctId: 'u', traits: { plan: 'pro' } });
    const report = await inlet.flush();
    expect(report.failed).toBe(2);
    expect(report.failedItems.every((f) => f.status === 401 && f.code === 'invalid_key' && f.attempts === 1)).toBe(true);
  });

  it('gives up after maxRetries and reports the last status', async () => {
    const inlet = await client({ maxRetries: 2 });
    proxy.faults.push({ status: 503 }, { status: 503 }, { status: 500 });
    inlet.track({ event: 'e', distinctId: 'u' });
    const report = await inlet.flush();
    expect(report.failedItems).toEqual([expect.objectContaining({ outcome: 'failed', status: 500, attempts: 3 })]);
  });

  it('sends identify traits that read back on the person', async () => {
    const inlet = await client();
    const who = `cust_traits_${++run}`;
    inlet.identify({ distinctId: who, traits: { plan: 'team', seats: 5 } });
    inlet.track({ event: 'seat_added', distinctId: who, timestamp: new Date() });
    expect(await inlet.flush()).toMatchObject({ accepted: 2 });
    expect((await live.person(who)).traits).toEqual({ plan: 'team', seats: 5 });
  });

  it('sends group, alias, and identify with setOnce and unset, read back on the person and the group', async () => {
    const inlet = await client();
    const who = `cust_groups_${++run}`;
    const t = Date.now();
    inlet.identify({ distinctId: who, traits: { plan: 'team', trial: true }, setOnce: { first_plan: 'free' }, timestamp: t - 3000 });
    inlet.identify({ distinctId: who, setOnce: { first_plan: 'pro' }, unset: ['trial'], timestamp: t - 2000 });
    inlet.group({ groupType: 'company', groupKey: `acme_${run}`, traits: { seats: 40 }, distinctId: who });
    inlet.alias({ distinctId: who, previousId: `${who}_anon` });
    expect(await inlet.flush()).toMatchObject({ accepted: 4, refused: 0, failed: 0 });
    const person = await live.person(who);
    expect(person.traits).toEqual({ plan: 'team', first_plan: 'free' });
    expect(person.distinct_ids.sort()).toEqual([who, `${who}_anon`].sort());
    expect(person.groups).toEqual([{ group_type: 'company', group_key: `acme_${run}` }]);
    expect(await live.group('company', `acme_${run}`)).toMatchObject({ traits: { seats: 40 }, members: [person.id] });
  });

  it('reports a sixth group type as refused with its code, the others accepted', async () => {
    const inlet = await client();
    for (const type of ['t1', 't2', 't3', 't4', 't5', 't6']) inlet.group({ groupType: type, groupKey: `g_${++run}` });
    const report = await inlet.flush();
    // Other tests of this server may have added types already; whatever they did, no more than 5 are ever taken.
    expect(report.accepted).toBeLessThanOrEqual(5);
    expect(report.refusedItems.length).toBeGreaterThanOrEqual(1);
    expect(report.refusedItems.every((r) => r.errors[0]?.code === 'too_many_group_types')).toBe(true);
  });
});

describe('queue, flush and close', () => {
  it('track past maxQueue returns false instead of throwing QueueFullError, and drain() resolves once fewer are held', async () => {
    const inlet = await client({ maxQueue: 3, flushAt: 10, flushIntervalMs: 3_600_000 });
    const [a, b, c, d] = ids(4, 'soft');
    expect(inlet.track({ event: 'e', distinctId: 'u', insertId: a! })).toBe(true);
    expect(inlet.track({ event: 'e', distinctId: 'u', insertId: b! })).toBe(true);
    expect(inlet.track({ event: 'e', distinctId: 'u', insertId: c! })).toBe(false);
    expect(inlet.track({ event: 'e', distinctId: 'u', insertId: d! })).toBe(false);
    expect(inlet.pending).toBe(4);
    // Past the soft mark the client sends without waiting for flushAt or the (hour-long) interval.
    await inlet.drain();
    expect(inlet.pending).toBeLessThan(3);
    const report = await inlet.flush();
    expect(report.accepted).toBe(4);
    await expect(inlet.drain()).resolves.toBeUndefined();
  });

  it('throws QueueFullError past maxQueueBytes, and nothing is lost of what was taken', async () => {
    const inlet = await client({ maxQueueBytes: 1400, flushAt: 10, flushIntervalMs: 3_600_000 });
    // About 390 bytes of JSON each: three fit in 1,400, a fourth does not.
    const padding = 'x'.repeat(250);
    for (const insertId of ids(3, 'full')) inlet.track({ event: 'e', distinctId: 'u', insertId, properties: { padding } });
    expect(() => inlet.track({ event: 'e', distinctId: 'u', properties: { padding } })).toThrow(QueueFullError);
    expect(inlet.pending).toBe(3);
    expect((await inlet.flush()).accepted).toBe(3);
    expect(() => inlet.track({ event: 'e', distinctId: 'u', properties: { padding } })).not.toThrow();
  });

  it('sends by count, and by time without any flush()', async () => {
    const results: ItemResult[] = [];
    let resolveAll!: () => void;
    const all = new Promise<void>((r) => (resolveAll = r));
    const inlet = await client({
      flushAt: 2,
      flushIntervalMs: 20,
      onResult: (r) => {
        results.push(r);
        if (results.length === 3) resolveAll();
      },
    });
    for (const insertId of ids(3, 'timed')) inlet.track({ event: 'e', distinctId: 'u', insertId });
    await all;
    expect(results.map((r) => r.outcome)).toEqual(['accepted', 'accepted', 'accepted']);
    // Outcomes settled before a flush() are in the next report, so none goes unreported.
    expect((await inlet.flush()).accepted).toBe(3);
  });

  it('flush() waits for items already in flight and for retries, and each item is in exactly one report', async () => {
    const inlet = await client({ flushAt: 5 });
    proxy.faults.push({ status: 503, retryAfter: '0' }, { status: 503, retryAfter: '0' });
    for (const insertId of ids(5, 'inflight')) inlet.track({ event: 'e', distinctId: 'u', insertId });
    const first = inlet.flush();
    inlet.track({ event: 'later', distinctId: 'u' });
    const second = inlet.flush();
    const [a, b] = await Promise.all([first, second]);
    expect(a.accepted).toBe(5);
    expect(b.accepted).toBe(1);
  });

  it('close() with the server down returns at its limit with every item failed, and later calls throw', async () => {
    const inlet = await client({ maxRetries: 1_000_000, retryBaseMs: 50, retryMaxMs: 50 });
    proxy.down = true;
    const insertIds = ids(7, 'down');
    for (const insertId of insertIds) inlet.track({ event: 'e', distinctId: 'u', insertId });
    const report = await inlet.close({ timeoutMs: 300 });
    expect(report.failed).toBe(7);
    expect(report.failedItems.map((f) => f.insertId).sort()).toEqual([...insertIds].sort());
    // Cut short by the limit, not by running out of retries.
    expect(report.failedItems.every((f) => f.error !== undefined && /closed/.test(f.error))).toBe(true);
    expect(() => inlet.track({ event: 'e', distinctId: 'u' })).toThrow(ClosedError);
    expect(() => inlet.identify({ distinctId: 'u' })).toThrow(ClosedError);
  });

  it('close() with the server up delivers everything first', async () => {
    const inlet = await client({ flushAt: 100, flushIntervalMs: 3_600_000 });
    for (const insertId of ids(10, 'closing')) inlet.track({ event: 'e', distinctId: 'u', insertId });
    expect(await inlet.close()).toMatchObject({ accepted: 10, failed: 0 });
  });

  it('never throws on network trouble: a port nobody listens on fails the items, in the report', async () => {
    const dead = await FaultProxy.start(live.url);
    const url = dead.url;
    await dead.close();
    const inlet = new Inlet({ key: live.key, baseUrl: url, maxRetries: 2, retryBaseMs: 1 });
    clients.push(inlet);
    proxy = await FaultProxy.start(live.url);
    inlet.track({ event: 'e', distinctId: 'u' });
    const report = await inlet.flush();
    expect(report.failedItems).toEqual([expect.objectContaining({ attempts: 3, error: expect.stringMatching(/ECONNREFUSED/) })]);
  });
});
