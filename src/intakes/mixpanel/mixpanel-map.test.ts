import { describe, expect, it } from 'vitest';
import { type Refusal, isRefusal } from '../../domain/intake/refusal.js';
import { decodeData, mixpanelItems, timeOf, tokenOf } from './mixpanel-map.js';

const text = (r: Uint8Array | Refusal) => (isRefusal(r) ? r : Buffer.from(r).toString('utf8'));
const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');

describe('decodeData', () => {
  it('reads data= from a query or a form, base64 whose + may have become spaces, or JSON as it is', () => {
    const json = { event: 'é>>>?', properties: { token: 'k' } };
    const data = b64(json);
    expect(data).toContain('+');
    expect(text(decodeData(Buffer.from(`ip=0&data=${encodeURIComponent(data)}`)))).toBe(JSON.stringify(json));
    expect(text(decodeData(Buffer.from(`data=${data}`)))).toBe(JSON.stringify(json));
    expect(text(decodeData(Buffer.from(`data=${encodeURIComponent(JSON.stringify(json))}`)))).toBe(JSON.stringify(json));
    expect(text(decodeData(Buffer.from(' [1]')))).toBe(' [1]');
  });

  it('refuses a missing or repeated data=, and one that is not base64 or not URL-encoded', () => {
    for (const body of ['ip=1', 'data=a&data=b', 'ip=0&data=a&verbose=1&data=b', 'data=%25%25%25', 'data=', 'data=%E0%A4%A', 'data=%zz']) {
      expect(decodeData(Buffer.from(body))).toMatchObject({ code: 'invalid_body' });
    }
  });

  it('finds data= among any other fields, without taking a field that only ends in "data=" for it', () => {
    const data = b64({ event: 'x' });
    expect(text(decodeData(Buffer.from(`${'a&'.repeat(100_000)}mydata=QQ&data=${encodeURIComponent(data)}&xdata=QQ&verbose=1`)))).toBe('{"event":"x"}');
    expect(decodeData(Buffer.from(`${'&'.repeat(1000)}mydata=${data}`))).toMatchObject({ code: 'invalid_body', message: expect.stringMatching(/^Send the events as data=/) });
  });
});

it('timeOf: seconds or milliseconds as epoch milliseconds; other forms passed on', () => {
  expect(timeOf(1_700_000_000)).toBe(1_700_000_000_000);
  expect(timeOf(1_700_000_000.5)).toBe(1_700_000_000_500);
  expect(timeOf(1_700_000_000_123)).toBe(1_700_000_000_123);
  expect(timeOf('yesterday')).toBe('yesterday');
});

it('tokenOf: properties.token of an event, $token of an update, the first message of an array', () => {
  expect(tokenOf({ properties: { token: 'a' } })).toEqual({ kind: 'token', token: 'a' });
  expect(tokenOf([{ $token: 'b' }, { $token: 'c' }])).toEqual({ kind: 'token', token: 'b' });
  expect(tokenOf({ properties: {} })).toEqual({ kind: 'missing' });
  expect(tokenOf('x')).toEqual({ kind: 'missing' });
});

describe('mixpanelItems', () => {
  it('an event: ids, time, insert_id out of its properties; the libraries\' fields left out', () => {
    const { items } = mixpanelItems([{ event: 'e', properties: { token: 't', mp_lib: 'python', $lib_version: '4', distinct_id: 7, time: 1, $insert_id: 'i-1', $device_id: 'd', keep: 1 } }], 'track');
    expect(items).toEqual([{ event: 'e', distinct_id: '7', insert_id: 'i-1', timestamp: 1000, anonymousId: 'd', properties: { keep: 1 } }]);
  });

  it('$device_id alone is the distinct_id; one that is a browser person key is the anonymous_id', () => {
    expect(mixpanelItems([{ event: 'e', properties: { $device_id: 'dev1' } }], 'track').items[0]).toMatchObject({ distinct_id: 'dev1' });
    expect(mixpanelItems([{ event: 'e', properties: { $device_id: 'per_x', $user_id: 'u' } }], 'track').items[0]).toMatchObject({ distinct_id: 'u', anonymous_id: 'per_x' });
  });

  it('engage: $set, $set_once, $unset as an identify; unkept operations refused by the map, at their index', () => {
    const mapped = mixpanelItems([{ $distinct_id: 'u', $set: { $email: 'e', a: 1 }, $time: 2 }, { $distinct_id: 'u', $add: { n: 1 } }], 'engage');
    expect(mapped.items[0]).toEqual({ type: 'identify', distinct_id: 'u', properties: { email: 'e', a: 1 }, timestamp: 2000 });
    expect([...mapped.refusals!]).toEqual([[1, [expect.objectContaining({ index: 1, code: 'unsupported_operation', field: '$add' })]]]);
  });

  it('engage: an operation Inlet does not know is refused like one it does not keep, and the libraries\' own flags pass', () => {
    const mapped = mixpanelItems([
      { $distinct_id: 'u', $token: 't', $ip: '0', $ignore_time: true, $ignore_alias: true, $time: 2, $set: { a: 1 } },
      { $distinct_id: 'u', $transactions: [{ $amount: 1 }] },
      { $distinct_id: 'u', $set: { a: 1 }, $merge: { b: 2 } },
    ], 'engage');
    expect(mapped.refusals!.has(0)).toBe(false);
    expect(mapped.refusals!.get(1)).toEqual([expect.objectContaining({ code: 'unsupported_operation', field: '$transactions' })]);
    expect(mapped.refusals!.get(2)).toEqual([expect.objectContaining({ code: 'unsupported_operation', field: '$merge' })]);
  });

  it('a message naming another token than the first message\'s is refused, never stored in the first one\'s project', () => {
    const mapped = mixpanelItems([
      { event: 'a', properties: { token: 'k1', distinct_id: 'u' } },
      { event: 'b', properties: { token: 'k2', distinct_id: 'u' } },
      { event: 'c', properties: { distinct_id: 'u' } },
    ], 'track');
    expect([...mapped.refusals!.keys()]).toEqual([1]);
    expect(mapped.refusals!.get(1)).toEqual([expect.objectContaining({ index: 1, code: 'token_mismatch', field: 'properties.token' })]);
    expect(mixpanelItems([{ $token: 'k1', $distinct_id: 'u', $set: { a: 1 } }, { $token: 'k2', $distinct_id: 'v', $set: { a: 1 } }], 'engage').refusals!.get(1))
      .toEqual([expect.objectContaining({ code: 'token_mismatch', field: '$token' })]);
  });

  it('groups: $set as a group', () => {
    expect(mixpanelItems([{ $group_key: 'company', $group_id: 5, $set: { s: 1 } }], 'groups').items[0]).toEqual({ type: 'group', group_type: 'company', group_key: '5', properties: { s: 1 } });
    expect(mixpanelItems([{ $group_key: 'company', $group_id: 5, $set_once: { s: 1 } }], 'groups').refusals!.size).toBe(1);
  });
});
