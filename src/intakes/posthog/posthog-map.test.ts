import { describe, expect, it } from 'vitest';
import { checkBatch } from '../../pipeline/checked-batch.js';
import { apiKeyOf, postHogItem, postHogItems, readPostHogBody } from './posthog-map.js';

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
const CTX = { now: NOW, recordIp: false, source: { id: 'src_1', filterBots: true } };
const LIB = { $lib: 'posthog-node', $lib_version: '5.70.0', $geoip_disable: true, $is_server: true };

describe('postHogItem', () => {
  it('a capture is a track: uuid as insert_id, PostHog\'s enrichment stripped, $groups kept', () => {
    const { item, personUpdate } = postHogItem(
      { event: 'paid', distinct_id: 'u1', uuid: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', properties: { ...LIB, plan: 'pro', '$feature/beta': true, $groups: { company: 'acme' } } },
      undefined,
      NOW,
    );
    expect(item).toEqual({ event: 'paid', distinct_id: 'u1', insert_id: '0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b', properties: { plan: 'pro', $groups: { company: 'acme' } } });
    expect(personUpdate).toBeNull();
  });

  it('$identify is an identify: $set the traits, $set_once set_once, other properties left out', () => {
    const { item } = postHogItem({ event: '$identify', distinct_id: 'u1', properties: { ...LIB, $set: { name: 'Kim' }, $set_once: { first: 'web' } } }, undefined, NOW);
    expect(item).toEqual({ type: 'identify', distinct_id: 'u1', properties: { name: 'Kim' }, set_once: { first: 'web' } });
  });

  it('$create_alias is an alias of properties.alias to the distinct_id', () => {
    const { item } = postHogItem({ event: '$create_alias', distinct_id: 'u1', properties: { ...LIB, distinct_id: 'u1', alias: 'anon-1' } }, undefined, NOW);
    expect(item).toEqual({ type: 'alias', distinct_id: 'u1', previous_id: 'anon-1' });
  });

  it('$groupidentify is a group item; the "$<type>_<key>" posthog-node sends without a distinctId makes no member', () => {
    const alone = postHogItem({ event: '$groupidentify', distinct_id: '$company_acme', properties: { ...LIB, $group_type: 'company', $group_key: 'acme', $group_set: { seats: 3 } } }, undefined, NOW);
    expect(alone.item).toEqual({ type: 'group', group_type: 'company', group_key: 'acme', properties: { seats: 3 } });
    const member = postHogItem({ event: '$groupidentify', distinct_id: 'u1', properties: { $group_type: 'company', $group_key: 'acme', $group_set: {} } }, undefined, NOW);
    expect(member.item).toMatchObject({ type: 'group', distinct_id: 'u1' });
  });

  it('$set, $set_once and $unset on an event make an identify of the same id and time, with an insert_id of its own', () => {
    const m = { event: 'upgraded', distinct_id: 'u1', uuid: 'e-1', timestamp: '2026-11-22T11:00:00.000Z', properties: { $set: { plan: 'pro' }, $unset: ['trial'] } };
    const { item, personUpdate } = postHogItem(m, undefined, NOW);
    expect(item).toEqual({ event: 'upgraded', distinct_id: 'u1', insert_id: 'e-1', timestamp: '2026-11-22T11:00:00.000Z', properties: {} });
    expect(personUpdate).toMatchObject({ type: 'identify', distinct_id: 'u1', timestamp: '2026-11-22T11:00:00.000Z', properties: { plan: 'pro' }, unset: ['trial'] });
    expect(personUpdate!.insert_id).toMatch(/^msg_[0-9a-f]{64}$/);
    expect(postHogItem(m, undefined, NOW).personUpdate!.insert_id).toBe(personUpdate!.insert_id);
  });

  it('corrects the timestamp by the skew to sent_at', () => {
    expect(postHogItem({ event: 'e', distinct_id: 'u', timestamp: '2026-11-22T11:00:00.000Z' }, '2026-11-22T11:00:05.000Z', NOW).item.timestamp).toBe('2026-11-22T11:59:55.000Z');
  });
});

describe('postHogItems', () => {
  it('maps each message to one item at its index; the identify an event\'s person operations make is its update, with its index', () => {
    const body = readPostHogBody({ api_key: 'k', batch: [
      { event: 'a', distinct_id: 'u1', properties: { $set: { x: 1 } } },
      { event: '$pageview', distinct_id: 'u1', properties: { $current_url: 'https://example.com/' } },
    ] });
    if ('code' in body) throw new Error(body.code);
    const { items, ownEvents, updates } = postHogItems(body, NOW);
    expect(items.map((i) => (i as { event: string }).event)).toEqual(['a', '$pageview']);
    expect([...ownEvents]).toEqual([1]);
    expect(updates).toEqual([{ message: 0, item: { type: 'identify', distinct_id: 'u1', properties: { x: 1 } }, operations: { $set: { x: 1 } } }]);
    const checked = checkBatch(items, [], { ...CTX, ownEvents });
    expect(checked.errors).toEqual([]);
  });

  it('other $ events are refused with their usual code', () => {
    const body = readPostHogBody({ event: '$feature_flag_called', distinct_id: 'u1' });
    if ('code' in body) throw new Error(body.code);
    const { items, ownEvents } = postHogItems(body, NOW);
    expect(checkBatch(items, [], { ...CTX, ownEvents }).errors.map((e) => e.code)).toEqual(['reserved_event_name']);
  });
});

describe('bodies, keys and compression', () => {
  it('reads a batch, an array of events or one event; refuses other shapes with the usual codes', () => {
    expect(readPostHogBody({ batch: [{ event: 'a' }], sent_at: 's' })).toEqual({ messages: [{ event: 'a' }], sentAt: 's' });
    expect(readPostHogBody([{ event: 'a' }])).toEqual({ messages: [{ event: 'a' }], sentAt: undefined });
    expect(readPostHogBody({ event: 'a', distinct_id: 'u' })).toMatchObject({ messages: [{ event: 'a' }] });
    expect(readPostHogBody('x')).toMatchObject({ code: 'invalid_body' });
    expect(readPostHogBody({ api_key: 'k' })).toMatchObject({ code: 'invalid_body' });
    expect(readPostHogBody({ batch: [] })).toMatchObject({ code: 'batch_empty' });
    expect(readPostHogBody({ batch: Array(501).fill({}) })).toMatchObject({ code: 'batch_too_many_items' });
  });

  it('takes the key as api_key or token', () => {
    expect(apiKeyOf({ api_key: 'a' })).toEqual({ kind: 'token', token: 'a' });
    expect(apiKeyOf({ token: 't' })).toEqual({ kind: 'token', token: 't' });
    expect(apiKeyOf({ api_key: '' })).toEqual({ kind: 'missing' });
  });
});
