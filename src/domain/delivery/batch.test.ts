import { describe, expect, it } from 'vitest';
import type { DeliveryEvent } from '../../stores/port-destinations.js';
import { BATCH_BYTES, BATCH_EVENTS, batchId, eventJson, planBatch } from './batch.js';

const ev = (seq: number, o: Partial<DeliveryEvent> = {}): DeliveryEvent => ({
  seq, id: `00000000-0000-7000-8000-${String(seq).padStart(12, '0')}`, sourceId: 'src_a', event: 'paid', distinctId: 'u', anonymousId: null,
  personId: 'per_1', sessionId: null, timestamp: 1_795_000_000_000, receivedAt: 1_795_000_000_001, insertId: null, properties: '{"n":1}', ...o,
});
const d = { projectId: 'prj_1', sources: [] as string[], events: [] as string[] };

describe('batches', () => {
  it('are events in the events list --json shape, with project and source, properties as stored', () => {
    expect(JSON.parse(eventJson(ev(1, { sessionId: 'ses_1', properties: '{"a":[1,{"b":"ü"}]}' }), 'prj_1'))).toEqual({
      id: ev(1).id, project_id: 'prj_1', source_id: 'src_a', event: 'paid', distinct_id: 'u', anonymous_id: null, person_id: 'per_1',
      session_id: 'ses_1', server_session: false, timestamp: '2026-11-18T11:06:40.000Z', received_at: '2026-11-18T11:06:40.001Z',
      insert_id: null, properties: { a: [1, { b: 'ü' }] },
    });
  });

  it('write every string as JSON.stringify does: quotes, backslashes, control characters and lone surrogates escaped', () => {
    const values = ['plain', '', 'say "hi"', 'back\\slash', 'tab\there', 'nul\u0000', '\u001f', 'ü 日本 😀', 'lone \ud800', '\udfff end', '\u2028', 'del\u007f', '</script>'];
    for (const v of values) {
      const text = eventJson(ev(1, { distinctId: v, event: v, anonymousId: v, sessionId: v, insertId: v }), 'prj_1');
      for (const key of ['distinct_id', 'event', 'anonymous_id', 'session_id', 'insert_id']) expect(text).toContain(`"${key}":${JSON.stringify(v)}`);
      expect(JSON.parse(text)).toMatchObject({ distinct_id: v, event: v });
    }
  });

  it('write every time as toISOString does, across minutes, days, years and the edges of four-digit years', () => {
    const times = [0, 1, 59_999, 60_000, 3_599_999, 86_399_999, 86_400_000, 951_782_400_000, 1_795_000_059_999, 253_402_300_799_999, 253_402_300_800_000, -1, -62_198_755_200_000];
    // Steps of primes cross seconds, minutes, days and leap years in every order the two writers' caches may meet them.
    for (let t = 946_684_799_000, i = 0; i < 5000; i++, t += 7_919 * 1_009 + (i % 3) * 59_999) times.push(t, t + 86_400_000 * 366);
    for (const t of times) {
      const got = JSON.parse(eventJson(ev(1, { timestamp: t, receivedAt: t + 61_001 }), 'prj_1')) as { timestamp: string; received_at: string };
      expect([got.timestamp, got.received_at]).toEqual([new Date(t).toISOString(), new Date(t + 61_001).toISOString()]);
    }
  });

  it('take the events the destination takes and reach as far as the read when all fit', () => {
    const read = { events: [ev(1), ev(2, { event: 'viewed' }), ev(3, { sourceId: 'src_b' })], through: 40 };
    expect(planBatch({ ...d, events: ['paid'], sources: ['src_a'] }, read)).toMatchObject({ events: [ev(1)], through: 40 });
    expect(planBatch({ ...d, events: ['nothing'] }, read)).toMatchObject({ events: [], through: 40 });
  });

  it('stop at 500 events or 1 MiB, and the next batch starts at the first event left out', () => {
    const many = { events: Array.from({ length: 600 }, (_, i) => ev(i + 1)), through: 900 };
    const byCount = planBatch(d, many);
    expect(byCount.events).toHaveLength(BATCH_EVENTS);
    expect(byCount.through).toBe(500);
    const big = `{"x":"${'a'.repeat(300_000)}"}`;
    const heavy = { events: Array.from({ length: 5 }, (_, i) => ev(i + 1, { properties: big })), through: 9 };
    const byBytes = planBatch(d, heavy);
    expect(byBytes.events).toHaveLength(3);
    expect(byBytes.through).toBe(3);
    expect(byBytes.eventJson.join(',').length).toBeLessThan(BATCH_BYTES);
    // One event larger than a batch still goes, alone: nothing is ever skipped.
    const huge = planBatch(d, { events: [ev(1, { properties: `{"x":"${'a'.repeat(BATCH_BYTES)}"}` }), ev(2)], through: 2 });
    expect(huge).toMatchObject({ through: 1 });
    expect(huge.events).toHaveLength(1);
  });

  it('have an id that is the same for the same range, and new after a replay', () => {
    expect(batchId('dst_1', 0, 10, 20)).toBe(batchId('dst_1', 0, 10, 20));
    expect(batchId('dst_1', 1, 10, 20)).not.toBe(batchId('dst_1', 0, 10, 20));
    expect(batchId('dst_1', 0, 10, 20)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });
});
