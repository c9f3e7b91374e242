import { expect, it } from 'vitest';
import { amplitudeItems, apiKeyOf, readAmplitudeBody } from './amplitude-map.js';

it('apiKeyOf: the api_key of the body', () => {
  expect(apiKeyOf({ api_key: 'k', events: [] })).toEqual({ kind: 'token', token: 'k' });
  expect(apiKeyOf({ events: [] })).toEqual({ kind: 'missing' });
  expect(apiKeyOf([])).toEqual({ kind: 'missing' });
});

it('readAmplitudeBody: an events array of 1 to 2,000', () => {
  expect(readAmplitudeBody({ events: [{}] })).toEqual([{}]);
  expect(readAmplitudeBody({ events: [] })).toMatchObject({ code: 'batch_empty' });
  expect(readAmplitudeBody({ events: Array.from({ length: 2001 }, () => ({})) })).toMatchObject({ code: 'batch_too_many_items' });
  expect(readAmplitudeBody({ event: {} })).toMatchObject({ code: 'invalid_body' });
});

it('an event: its ids, time and insert_id, event_properties and groups; the library\'s fields left out; user_properties as a person update', () => {
  const mapped = amplitudeItems([{
    event_type: 'paid', user_id: 7, device_id: 'dev', time: 1_700_000_000_000, insert_id: 'ins-1', event_properties: { total: 3 }, groups: { company: 'acme' },
    user_properties: { $set: { plan: 'pro' } }, library: 'amplitude-node/1.5.73', platform: 'Node.js', os_name: 'linux',
  }]);
  expect(mapped.items).toEqual([{ event: 'paid', distinct_id: '7', anonymousId: 'dev', insert_id: 'ins-1', timestamp: 1_700_000_000_000, properties: { total: 3, $groups: { company: 'acme' } } }]);
  expect(mapped.updates).toEqual([{ message: 0, item: expect.objectContaining({ type: 'identify', distinct_id: '7', properties: { plan: 'pro' } }), operations: { user_properties: { $set: { plan: 'pro' } } } }]);
});

it('$identify: $set, $setOnce and $unset (its keys); its groups join the person; $groupidentify is a group', () => {
  const mapped = amplitudeItems([
    { event_type: '$identify', user_id: 'u', user_properties: { $set: { a: 1 }, $setOnce: { b: 2 }, $unset: { c: '-' } }, groups: { company: ['acme', 'beta'] } },
    { event_type: '$groupidentify', device_id: 'd', groups: { company: 'acme' }, group_properties: { $set: { seats: 4 } } },
  ]);
  expect(mapped.items).toEqual([
    { type: 'identify', distinct_id: 'u', properties: { a: 1 }, set_once: { b: 2 }, unset: ['c'] },
    { type: 'group', group_type: 'company', group_key: 'acme', properties: { seats: 4 } },
  ]);
  expect(mapped.updates.map((u) => u.item)).toEqual([
    { type: 'group', distinct_id: 'u', group_type: 'company', group_key: 'acme' },
    { type: 'group', distinct_id: 'u', group_type: 'company', group_key: 'beta' },
  ]);
});

it('operations Inlet does not keep are refused by the map, at their index', () => {
  const mapped = amplitudeItems([
    { event_type: '$identify', user_id: 'u', user_properties: { $add: { n: 1 } } },
    { event_type: '$groupidentify', groups: { company: 'acme' }, group_properties: { $setOnce: { s: 1 } } },
  ]);
  expect([...mapped.refusals!.entries()]).toEqual([
    [0, [expect.objectContaining({ code: 'unsupported_operation', field: 'user_properties.$add' })]],
    [1, [expect.objectContaining({ code: 'unsupported_operation', field: 'group_properties.$setOnce' })]],
  ]);
});
