import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { CheckContext } from '../pipeline/checked-batch.js';
import { type CheckedMessages, checkMessages, findKey, readMessages } from '../pipeline/foreign-body.js';
import type { Refusal } from '../domain/intake/refusal.js';
import { POSTHOG_WIRE } from './posthog/posthog-map.js';
import { SEGMENT_WIRE } from './segment/segment-map.js';

const NOW = Date.UTC(2026, 10, 24, 12);
const CTX: CheckContext = { now: NOW, recordIp: true, source: { id: 'src_1', filterBots: true } };
const BOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';
const LONG_KEY = 'k'.repeat(300);
const json = (x: unknown) => Buffer.from(JSON.stringify(x));

/** A PostHog body checked as the intake checks it. */
function checked(batch: unknown[]): CheckedMessages {
  const mapped = readMessages(json({ api_key: 'x', batch }), POSTHOG_WIRE, { intake: 'posthog' }, NOW);
  if ('code' in mapped) throw new Error(mapped.code);
  return checkMessages(mapped, CTX);
}

describe('a PostHog message with $set is one item', () => {
  it('posthog-set-counted-twice: 500 messages with $set are 500 items, each update at its message\'s index', () => {
    const batch = Array.from({ length: 500 }, (_, i) => ({ event: 'paid', distinct_id: `u${i}`, uuid: `e-${i}`, properties: { n: i, $set: { plan: 'pro' } } }));
    const { batch: b, updates } = checked(batch);
    expect(b.count).toBe(500);
    expect(b.items.map((i) => i.index)).toEqual(batch.map((_, i) => i));
    expect(b.items.every((i) => i.type === 'track')).toBe(true);
    expect(updates.map((u) => [u.index, u.type, u.distinctId])).toEqual(batch.map((m, i) => [i, 'identify', m.distinct_id]));
    expect(b.errors).toEqual([]);
  });

  it('posthog-set-indexed-past-batch: a bad $set refuses its message whole, at its own index, under the field it was sent in', () => {
    const { batch: b, updates } = checked([
      { event: 'a', distinct_id: 'u0', properties: { $set: { plan: 'pro' } } },
      { event: 'b', distinct_id: 'u1', properties: { x: 1, $set: { [LONG_KEY]: 1 } } },
      { event: 'c', distinct_id: 'u2', properties: { $set_once: { [LONG_KEY]: 1 }, $unset: 'plan' } },
    ]);
    expect(b.count).toBe(3);
    expect(b.items.map((i) => i.index)).toEqual([0]);
    expect(updates.map((u) => u.index)).toEqual([0]);
    expect(b.errors.map((e) => [e.index, e.code, e.field])).toEqual([
      [1, 'invalid_properties', 'properties.$set'],
      [2, 'invalid_set_once', 'properties.$set_once'],
      [2, 'invalid_unset', 'properties.$unset'],
    ]);
    expect(b.errors[0]!.message).toContain(LONG_KEY.slice(0, 20));
    // Named and sampled as the message it is, its operations in its properties.
    expect(b.refused.map((r) => [r.index, r.event, r.distinctId])).toEqual([[1, 'b', 'u1'], [2, 'c', 'u2']]);
    expect(JSON.parse(b.refused[0]!.sample!.text.text)).toMatchObject({ event: 'b', properties: { x: 1, $set: { [LONG_KEY]: 1 } } });
  });

  it('an event refused lists its own errors, then those of its operations; its update is not written', () => {
    const { batch: b, updates } = checked([{ event: '$bad', distinct_id: 'u0', properties: { $set: { [LONG_KEY]: 1 } } }]);
    expect(b.errors.map((e) => [e.index, e.code, e.field])).toEqual([
      [0, 'reserved_event_name', 'event'],
      [0, 'invalid_properties', 'properties.$set'],
    ]);
    expect(b.items).toEqual([]);
    expect(updates).toEqual([]);
  });

  it('an event the bot filter drops takes its update with it', () => {
    const { batch: b, updates } = checked([{ event: 'crawled', distinct_id: 'u0', properties: { $user_agent: BOT, $set: { plan: 'pro' } } }]);
    expect(b.dropped.map((d) => [d.index, d.reason])).toEqual([[0, 'bot_filtered']]);
    expect(updates).toEqual([]);
  });
});

describe('the key of a body whose key is inside it', () => {
  const shape = POSTHOG_WIRE;

  it('is found in the JSON, decompressed first when gzip', () => {
    const body = json({ api_key: 'srv_live_x', batch: [] });
    expect(findKey(body, false, shape)).toEqual({ key: { kind: 'token', token: 'srv_live_x' }, json: body });
    const found = findKey(gzipSync(body), true, shape);
    expect(found).toMatchObject({ key: { kind: 'token', token: 'srv_live_x' } });
    expect(Buffer.from((found as { json: Uint8Array }).json)).toEqual(body);
    expect(findKey(json({ writeKey: 'srv_live_y' }), false, SEGMENT_WIRE)).toMatchObject({ key: { kind: 'token', token: 'srv_live_y' } });
  });

  it('is missing from a body that is not JSON; a broken or oversized gzip stream is refused as readBody refuses it', () => {
    expect(findKey(Buffer.from('{"api_key": "srv_live_x"'), false, shape)).toMatchObject({ key: { kind: 'missing' } });
    expect((findKey(Buffer.from('not gzip'), true, shape) as Refusal).code).toBe('invalid_json');
    const bomb = gzipSync(Buffer.alloc(2 * 1_048_576, 0x20));
    expect(bomb.length).toBeLessThan(4096);
    expect((findKey(bomb, true, shape) as Refusal).code).toBe('payload_too_large');
  });
});
