import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LiveWindow, type LiveRequest } from '../../src/domain/live-window.js';
import { CheckThreads, OFF_THREAD_MIN_BYTES } from '../../src/intakes/check-threads.js';
import { type Fixture, TestClock, makeFixture, send } from '../helpers/fixture.js';

const BOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
const FIREFOX = 'Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0';

/** `n` items of every kind: tracks with properties, identifies, browsers, bots, refused items, repeats. */
function items(n: number, tag: string, at: number): unknown[] {
  return Array.from({ length: n }, (_, i) => {
    const id = `${tag}-${i}`;
    switch (i % 7) {
      case 0: return { event: 'paid', distinct_id: `u_${i % 40}`, insert_id: id, timestamp: at - i, properties: { $revenue: i, $currency: 'USD', plan: { tier: 'pro', seats: [i, i + 1] } } };
      case 1: return { type: 'identify', distinct_id: `u_${i % 40}`, insert_id: id, properties: { email: `u${i}@example.com`, n: i } };
      case 2: return { event: 'viewed', distinct_id: `u_${i % 40}`, insert_id: id, properties: { $user_agent: FIREFOX, $current_url: 'https://example.com/a?b=1' } };
      case 3: return { event: 'crawled', distinct_id: `u_${i % 40}`, insert_id: id, properties: { $user_agent: BOT } };
      case 4: return { event: '', distinct_id: `u_${i}` };
      case 5: return { event: 'again', distinct_id: `u_${i}`, insert_id: `${tag}-0` };
      default: return { event: 'odd keys', distinct_id: `u_${i}`, extra: true, properties: { 'weird key': '✓ é \u2028', $lib: 'x' } };
    }
  });
}

/** Two long texts the same, or the stretch where they first differ (a readable failure). */
function expectSameText(a: string, b: string): void {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  expect(a.slice(Math.max(0, i - 200), i + 200)).toBe(b.slice(Math.max(0, i - 200), i + 200));
}

/** Ids the two servers make up on their own (events, people, requests) replaced by their order of appearance. */
function masked(text: string): string {
  const seen = new Map<string, string>();
  return text.replace(/\b(?:per|req|src)_[A-Za-z0-9]+\b|\b[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, (id) => {
    if (!seen.has(id)) seen.set(id, `#${seen.size}`);
    return seen.get(id)!;
  });
}

describe('a server that checks large bodies on a thread', () => {
  const clock = new TestClock();
  const threads = new CheckThreads(1);
  const lives = { threaded: new LiveWindow(undefined, undefined, clock.now), inline: new LiveWindow(undefined, undefined, clock.now) };
  let threaded: Fixture;
  let inline: Fixture;

  beforeAll(async () => {
    threaded = await makeFixture({ clock, checks: threads, live: lives.threaded });
    inline = await makeFixture({ clock, live: lives.inline });
  });
  afterAll(async () => {
    await threaded.close();
    await inline.close();
    await threads.close();
  });

  /** Sends the same request to both servers and expects the same answer, ids aside. */
  async function same(body: Buffer, opts: { query?: string; path?: string; gzip?: boolean } = {}) {
    expect(body.length).toBeGreaterThanOrEqual(OFF_THREAD_MIN_BYTES);
    const raw = opts.gzip ? gzipSync(body) : body;
    const headers: Record<string, string> = opts.gzip ? { 'content-encoding': 'gzip' } : {};
    const before = threads.stats.offThread;
    const [a, b] = [await send(threaded, null, { ...opts, raw, headers }), await send(inline, null, { ...opts, raw, headers })];
    expect(threads.stats.offThread).toBe(before + 1);
    expect(a.statusCode).toBe(b.statusCode);
    expectSameText(masked(a.body), masked(b.body));
    return a;
  }

  const json = (x: unknown) => Buffer.from(JSON.stringify(x));

  it('answers as the main thread does, stores the same events and shows the same live view', async () => {
    const seen: Record<string, LiveRequest[]> = { threaded: [], inline: [] };
    const stops = [lives.threaded.subscribe(threaded.sourceId, (r) => seen.threaded!.push(r)), lives.inline.subscribe(inline.sourceId, (r) => seen.inline!.push(r))];
    const at = clock.now() - 60_000;
    expect((await same(json({ items: items(490, 'a', at), sent_at: 'x' }))).statusCode).toBe(202);
    expect((await same(json({ items: items(490, 'b', at) }), { gzip: true })).statusCode).toBe(202);
    // The same ids again: every valid item is a repeat now.
    expect((await same(json({ items: items(490, 'b', at) }))).statusCode).toBe(202);
    for (const stop of stops) stop();

    const stored = async (f: Fixture) => masked(JSON.stringify(await f.collector.store.listEvents(f.sourceId, 2000)));
    const events = await stored(threaded);
    expectSameText(events, await stored(inline));
    // Three kept tracks in every seven items of two bodies, and again those without an insert_id.
    expect(JSON.parse(events)).toHaveLength(2 * 3 * 70 + 70);
    expectSameText(masked(JSON.stringify(seen.threaded)), masked(JSON.stringify(seen.inline)));
    expect(seen.threaded!.flatMap((r) => r.items).filter((i) => i.outcome === 'refused' && i.distinctId !== null)).toHaveLength(3 * 2 * 70);
  });

  it('answers dry runs, strict and wholly refused batches, imports and broken bodies as the main thread does', async () => {
    const at = clock.now() - 60_000;
    expect((await same(json({ items: items(490, 'c', at) }), { query: 'validate=true' })).statusCode).toBe(200);
    expect((await same(json({ items: items(490, 'd', at) }), { query: 'strict=true' })).statusCode).toBe(400);
    const refused = Array.from({ length: 400 }, (_, i) => ({ event: '$mine', distinct_id: `u_${i}`, properties: { pad: 'x'.repeat(80) } }));
    expect((await same(json({ items: refused }))).statusCode).toBe(400);
    // Items without a timestamp are refused by the import endpoint.
    const old = items(490, 'e', clock.now() - 30 * 86_400_000);
    expect((await same(json({ items: old }), { path: '/api/v1/import' })).statusCode).toBe(202);
    expect((await same(Buffer.concat([json({ items: items(490, 'f', at) }), Buffer.from(',')]))).statusCode).toBe(400);
    expect((await same(json({ items: items(501, 'g', at) }))).statusCode).toBe(400);
  });

  it('answers Segment and PostHog bodies with their key in a header as the main thread does, a message with $set one item', async () => {
    const at = new Date(clock.now() - 60_000).toISOString();
    const messages = (tag: string) =>
      items(490, tag, clock.now()).map((it, i) => {
        const { event, distinct_id: userId, insert_id: messageId, properties } = it as Record<string, unknown>;
        return { type: i % 7 === 1 ? 'identify' : 'track', event, userId, messageId, timestamp: at, properties, traits: properties };
      });
    const posthog = (tag: string) =>
      items(490, tag, clock.now()).map((it, i) => {
        const { event, distinct_id, insert_id: uuid, properties } = it as Record<string, unknown>;
        return { event: event ?? 'identified', distinct_id, uuid, timestamp: at, properties: i % 3 === 0 ? { ...(properties as object), $set: { n: i, [i % 9 === 0 ? 'k'.repeat(300) : 'ok']: 1 } } : properties };
      });
    expect((await same(json({ batch: messages('s') }), { path: '/v1/batch' })).statusCode).toBe(200);
    expect((await same(json({ batch: posthog('p') }), { path: '/batch/' })).statusCode).toBe(200);
    expect((await same(json({ batch: posthog('q') }), { path: '/batch/', gzip: true })).statusCode).toBe(200);
    expect((await same(json({ batch: posthog('p') }), { path: '/batch/' })).json().duplicates.length).toBeGreaterThan(0);
    expect((await same(Buffer.concat([json({ batch: posthog('r') }), Buffer.from(']')]), { path: '/e/' })).statusCode).toBe(400);
  });
});
