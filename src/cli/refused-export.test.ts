import { describe, expect, it } from 'vitest';
import type { StoredSample } from '../stores/port-outcomes.js';
import { derivedInsertId, exportLine } from './refused-export.js';

// Cast: the fields export reads are here; others a store adds later do not matter to it.
const sample = (over: Partial<StoredSample>): StoredSample =>
  ({
  id: 1,
  projectId: 'prj_1',
  sourceId: 'src_1',
  outcome: 'refused',
  code: 'reserved_event_name',
  codes: ['reserved_event_name'],
  errors: '[{"index":0,"code":"reserved_event_name","field":"event","message":"…"}]',
  item: '{"event":"$x","distinct_id":"u"}',
  cut: false,
  receivedAt: 0,
  requestId: 'req_0123456789abcdef',
  index: 3,
  distinctId: 'u',
  anonymousId: null,
  ...over,
  }) as StoredSample;

describe('exportLine', () => {
  it('keeps an insert_id sent as insert_id or as properties.$insert_id, and derives one only when none was sent', () => {
    const line = (item: string) => JSON.parse((exportLine(sample({ item }), false) as { line: string }).line) as Record<string, unknown>;
    expect(line('{"event":"$x","insert_id":"own"}').insert_id).toBe('own');
    expect(line('{"event":"$x","properties":{"$insert_id":"p_own"}}').insert_id).toBeUndefined();
    expect(line('{"event":"$x"}').insert_id).toBe('req_0123456789abcdef-3');
  });

  it('leaves out what inlet send could not take back: cut, withheld (an erased person\'s, kept as null or nothing), not an object', () => {
    expect(exportLine(sample({ cut: true, item: '{"event":"$x","pad":"xxx' }), true)).toEqual({ left: 'cut' });
    expect(exportLine(sample({ outcome: 'dropped', code: 'suppressed', item: 'null', errors: '[]' }), true)).toEqual({ left: 'withheld' });
    expect(exportLine(sample({ item: '' }), true)).toEqual({ left: 'withheld' });
    expect(exportLine(sample({ item: '["a"]' }), true)).toEqual({ left: 'not_object' });
    expect(exportLine(sample({ item: '42' }), true)).toEqual({ left: 'not_object' });
  });

  it('leaves out items kept with a tracking plan\'s warning: they were stored', () => {
    expect(exportLine(sample({ outcome: 'warned', code: 'plan_violation', item: '{"event":"order_completed"}' }), true)).toEqual({ left: 'warned' });
  });

  it('a request id that would not make a valid insert_id is hashed into one', () => {
    const id = derivedInsertId('req with spaces and a very long tail '.repeat(3), 7);
    expect(id).toMatch(/^rx-[0-9a-f]{40}$/);
    expect(derivedInsertId('req with spaces and a very long tail '.repeat(3), 7)).toBe(id);
  });
});
