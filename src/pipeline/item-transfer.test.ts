import type { ShownItem } from '../domain/items/enriched-item.js';
import { describe, expect, it } from 'vitest';
import { type CheckedBatch, checkBatch } from './checked-batch.js';
import { AT, packBatch, unpackBatch } from './item-transfer.js';

const NOW = Date.UTC(2026, 10, 24, 12);
const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36';
const BOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)';

/** Every field of every item, its properties included, as plain data. */
function plain(b: CheckedBatch) {
  const item = (i: ShownItem) => ({ ...i, properties: i.properties });
  return { ...b, items: b.items.map(item), dropped: b.dropped.map((d) => ({ ...d, item: item(d.item) })) };
}

const items = [
  { event: 'paid', distinct_id: 'u_1', insert_id: 'i-1', properties: { $revenue: 12.5, $currency: 'EUR', nested: { a: [1, 'two', null] } } },
  { type: 'identify', distinct_id: 'u_1', properties: { email: 'a@example.com', plan: 'pro' } },
  { event: 'viewed', distinct_id: 'u_6', session_id: 'ses_1', timestamp: NOW - 1000, properties: { $user_agent: CHROME, extra: 'é ✓ \u2028' } },
  { event: 'crawled', distinct_id: 'u_2', properties: { $user_agent: BOT } },
  { event: '$reserved', distinct_id: 'u_3' },
  { distinct_id: 'u_4' },
  'not an object',
  { event: 'paid', distinct_id: 'u_1', insert_id: 'i-1' },
  { event: 'with dropped key', distinct_id: 'u_5', unknown_field: 1, properties: { $insert_id: 'i-2' } },
  { event: 'browsed', anonymous_id: 'per_a1b2c3d4e5f6g7h8', session_id: 'ses_2', properties: { page: '/' } },
  { type: 'identify', distinct_id: 'u_7', set_once: { first_seen: 'today' }, unset: ['old_plan'] },
  { type: 'group', group_type: 'company', group_key: 'acme', distinct_id: 'u_7', properties: { seats: 12 } },
  { type: 'alias', distinct_id: 'u_7', previous_id: 'anon-7' },
];

describe('a checked batch sent between threads', () => {
  const batch = checkBatch(items, ['sent_at'], { now: NOW, recordIp: false, source: { id: 'src_1', filterBots: true } });

  it('comes out as it went in, through a structured clone, every field and properties alike', () => {
    expect(batch.items.length).toBeGreaterThan(3);
    expect(batch.dropped).toHaveLength(1);
    expect(batch.errors.length).toBeGreaterThan(2);
    expect(batch.items.some((i) => i.anonymousId !== null)).toBe(true);
    expect(batch.items.map((i) => i.type)).toEqual(expect.arrayContaining(['group', 'alias']));
    const moved = unpackBatch(structuredClone(packBatch(batch)));
    expect(plain(moved)).toEqual(plain(batch));
  });

  it('puts each field in a place of its own', () => {
    const places = Object.values(AT).sort((a, b) => a - b);
    expect(places).toEqual(places.map((_, i) => i));
  });

  it('parses an item’s properties only when asked, once', () => {
    const [first] = unpackBatch(structuredClone(packBatch(batch))).items;
    expect(first!.propertiesJson).toBe(batch.items[0]!.propertiesJson);
    expect(first!.properties).toBe(first!.properties);
    expect(first!.properties).toEqual(batch.items[0]!.properties);
  });

  it('names each refused item once, by what it sent as text, with the item as sent to be kept', () => {
    const sample = (i: number, distinctId: string | null) => ({ text: { text: JSON.stringify(items[i]), cut: false }, distinctId, anonymousId: null, previousId: null });
    expect(batch.refused).toEqual([
      { index: 4, event: '$reserved', distinctId: 'u_3', sample: sample(4, 'u_3') },
      { index: 5, event: null, distinctId: 'u_4', sample: sample(5, 'u_4') },
      { index: 6, event: null, distinctId: null, sample: sample(6, null) },
      { index: 7, event: 'paid', distinctId: 'u_1', insertId: 'i-1', sample: sample(7, 'u_1') },
    ]);
  });

  it('keeps no more refused items of a code than would be stored: the newest of the request', () => {
    const many = Array.from({ length: 150 }, (_, i) => ({ event: `$r${i}`, distinct_id: 'u' }));
    const checked = checkBatch(many, [], { now: NOW, recordIp: false, source: { id: 'src_1', filterBots: true } });
    const sampled = checked.refused.filter((r) => r.sample !== null).map((r) => r.index);
    expect(sampled).toEqual(Array.from({ length: 100 }, (_, i) => 50 + i));
  });
});
