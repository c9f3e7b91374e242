import { describe, expect, it } from 'vitest';
import { checkItem } from '../../pipeline/check-item.js';
import { correctedTimestamp, insertIdFor, segmentItem } from './segment-map.js';

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);

describe('segmentItem', () => {
  it('keeps an anonymousId that is neither a per_ key nor needed as the distinct_id among the keys not kept', () => {
    const item = segmentItem({ type: 'track', event: 'e', userId: 'u1', anonymousId: 'anon-1' }, undefined, NOW);
    expect(item).toMatchObject({ event: 'e', distinct_id: 'u1' });
    const checked = checkItem(item, 0, { now: NOW, recordIp: false, source: { id: 'src_1', filterBots: true } });
    expect(checked.ok && checked.item.droppedKeys).toEqual(['anonymousId']);
  });

  it('treats an empty userId as absent, so the anonymousId identifies the sender', () => {
    expect(segmentItem({ type: 'track', event: 'e', userId: '', anonymousId: 'anon-2' }, undefined, NOW)).toMatchObject({ distinct_id: 'anon-2' });
  });

  it('a numeric userId becomes its string', () => {
    expect(segmentItem({ type: 'identify', userId: 42, traits: { a: 1 } }, undefined, NOW)).toEqual({ type: 'identify', distinct_id: '42', properties: { a: 1 } });
  });

  it('leaves properties out when the message has none and no context to add', () => {
    expect(segmentItem({ type: 'track', event: 'e', userId: 'u' }, undefined, NOW)).toEqual({ event: 'e', distinct_id: 'u' });
  });

  it('passes a properties value that is not an object on, for the item checks to refuse', () => {
    expect(segmentItem({ type: 'track', event: 'e', userId: 'u', properties: [1] }, undefined, NOW).properties).toEqual([1]);
  });
});

describe('correctedTimestamp', () => {
  it('moves an ISO timestamp by receivedAt - sentAt', () => {
    expect(correctedTimestamp('2026-11-22T11:00:00.000Z', '2026-11-22T11:00:05.000Z', NOW)).toBe('2026-11-22T11:59:55.000Z');
  });

  it('leaves it as sent without a usable sentAt, and passes other forms on unchanged', () => {
    expect(correctedTimestamp('2026-11-22T11:00:00Z', undefined, NOW)).toBe('2026-11-22T11:00:00Z');
    expect(correctedTimestamp('2026-11-22T11:00:00Z', 'yesterday', NOW)).toBe('2026-11-22T11:00:00Z');
    expect(correctedTimestamp('2026-11-22 11:00', '2026-11-22T11:00:05Z', NOW)).toBe('2026-11-22 11:00');
    expect(correctedTimestamp(1_795_000_000_000, '2026-11-22T11:00:05Z', NOW)).toBe(1_795_000_000_000);
  });
});

describe('insertIdFor', () => {
  it('keeps a messageId that fits the insert_id rule and hashes one that does not, the same way every time', () => {
    expect(insertIdFor('node-next-1-abc')).toBe('node-next-1-abc');
    const hashed = insertIdFor('a b c');
    expect(hashed).toMatch(/^msg_[0-9a-f]{64}$/);
    expect(insertIdFor('a b c')).toBe(hashed);
    expect(insertIdFor('x'.repeat(81))).toMatch(/^msg_/);
    expect(insertIdFor(undefined)).toBeUndefined();
  });
});

describe('segmentItem, group and alias', () => {
  it('group: groupId is the key, traits.group_type the type (else company), the other traits the group\'s', () => {
    expect(segmentItem({ type: 'group', userId: 'u1', groupId: 'acme', traits: { group_type: 'team', seats: 3 } }, undefined, NOW)).toEqual({
      type: 'group', group_key: 'acme', group_type: 'team', properties: { seats: 3 }, distinct_id: 'u1',
    });
    expect(segmentItem({ type: 'group', anonymousId: 'a-1', groupId: 7, context: { ip: '10.0.0.1' } }, undefined, NOW)).toEqual({
      type: 'group', group_key: '7', group_type: 'company', distinct_id: 'a-1',
    });
  });

  it('alias: previousId is the previous_id, userId the distinct_id', () => {
    expect(segmentItem({ type: 'alias', userId: 'u1', previousId: 'anon-1', messageId: 'm-1' }, undefined, NOW)).toEqual({
      type: 'alias', previous_id: 'anon-1', distinct_id: 'u1', insert_id: 'm-1',
    });
  });
});
