import { describe, expect, it } from 'vitest';
import type { DeliveryEvent, DestinationRecord, FileMaker, FilePlan, FileSender, OutgoingFile } from '../../stores/port-destinations.js';
import type { CourierDestination, CourierReads } from './courier.js';
import { FILE_EVENTS, type MadeFiles, fileTurn } from './file-turn.js';

const ev = (seq: number): DeliveryEvent => ({
  seq, id: `evt_${seq}`, sourceId: 'src_a', event: 'paid', distinctId: 'u', anonymousId: null,
  personId: 'per_1', sessionId: null, timestamp: 1_795_000_000_000 + seq, receivedAt: 1_795_000_000_000 + seq, insertId: null, properties: '{"n":1}',
});

/** A store of `n` events whose reads are counted, one event at a time. */
function store(n: number) {
  const events = Array.from({ length: n }, (_, i) => ev(i + 1));
  const reads = { events: 0 };
  const past = (after: number, upTo: number) => events.filter((e) => e.seq > after && e.seq <= upTo);
  const r: CourierReads = {
    get: async () => null as DestinationRecord | null,
    async read(_p, after, upTo, limit) {
      const found = past(after, upTo).slice(0, limit);
      reads.events += found.length;
      return { events: found, through: found.length === limit ? found.at(-1)!.seq : upTo };
    },
    countPast: async (_d, after, upTo, cap) => Math.min(past(after, upTo).length, cap),
    oldestPast: async (_d, after, upTo) => past(after, upTo)[0]?.receivedAt ?? null,
  };
  const erase = (seq: number) => events.splice(events.findIndex((e) => e.seq === seq), 1);
  return { r, reads, erase };
}

/** A sender whose files are the ids of their events, kept instead of written. */
function sender() {
  const written: { plan: FilePlan; ids: string[] }[] = [];
  const s: FileSender = {
    everyMs: 1000,
    newFile: async (): Promise<FileMaker> => {
      const ids: string[] = [];
      return { add: (e) => ids.push(e.id), finish: async () => Buffer.from(ids.join(',')) };
    },
    writeFile: async (f: OutgoingFile) => {
      written.push({ plan: f.plan, ids: f.body.toString().split(',') });
      return { ok: true };
    },
    close: async () => undefined,
  };
  return { s, written };
}

const d = (file: FilePlan | null = null): CourierDestination => ({ id: 'dst_1', projectId: 'prj_1', kind: 's3', config: {}, sources: [], events: [], generation: 0, file });
const never = new AbortController().signal;
const late = () => 1_795_000_000_000 + 86_400_000;

describe('a file', () => {
  it('is read from the store once: the turn that plans it makes it, and the turn after its plan is recorded writes what was made', async () => {
    const { r, reads } = store(FILE_EVENTS + 500);
    const { s, written } = sender();
    const made: MadeFiles = new Map();
    const t1 = await fileTurn(r, s, d(), 0, FILE_EVENTS + 500, late, never, made);
    expect(t1.planned).toEqual({ generation: 0, after: 0, through: FILE_EVENTS, first: 1, last: FILE_EVENTS, at: ev(1).receivedAt });
    expect(written).toEqual([]);
    const t2 = await fileTurn(r, s, d(t1.planned!), 0, FILE_EVENTS + 500, late, never, made);
    expect(t2).toMatchObject({ through: FILE_EVENTS, batches: 1, events: FILE_EVENTS, failure: null });
    expect(written).toHaveLength(1);
    expect(written[0]!.ids).toHaveLength(FILE_EVENTS);
    expect(written[0]!.ids.at(-1)).toBe(`evt_${FILE_EVENTS}`);
    // Each event of the file read once; the one read past its end, once more by the next file.
    expect(reads.events).toBeLessThanOrEqual(FILE_EVENTS + 5_000);
    expect(made.size).toBe(0);
  });

  it('is made again from its recorded range when it was not made here (another server planned it, then died), or an event of it was erased meanwhile', async () => {
    const { r, erase } = store(30);
    const { s, written } = sender();
    const plan: FilePlan = { generation: 0, after: 0, through: 20, first: 1, last: 20, at: ev(1).receivedAt };
    expect(await fileTurn(r, s, d(plan), 0, 30, late, never, new Map())).toMatchObject({ through: 20, events: 20 });
    expect(written.pop()).toEqual({ plan, ids: Array.from({ length: 20 }, (_, i) => `evt_${i + 1}`) });

    const made: MadeFiles = new Map();
    const planned = (await fileTurn(r, s, d(), 20, 30, late, never, made)).planned!;
    erase(25);
    expect(await fileTurn(r, s, d(planned), 20, 30, late, never, made)).toMatchObject({ through: 30, events: 9 });
    expect(written.pop()!.ids).not.toContain('evt_25');
  });

  it('is not held past a failed write: the retry makes it again from its recorded range', async () => {
    const { r, reads } = store(30);
    const { s, written } = sender();
    let down = true;
    const flaky: FileSender = { ...s, writeFile: async (f, signal) => (down ? ({ ok: false, error: 'store down', retryAfterMs: null } as const) : s.writeFile(f, signal)) };
    const made: MadeFiles = new Map();
    const planned = (await fileTurn(r, flaky, d(), 0, 30, late, never, made)).planned!;
    expect((await fileTurn(r, flaky, d(planned), 0, 30, late, never, made)).failure).not.toBeNull();
    expect(made.size).toBe(0);
    down = false;
    const before = reads.events;
    expect(await fileTurn(r, flaky, d(planned), 0, 30, late, never, made)).toMatchObject({ through: 30, events: 30, failure: null });
    expect(reads.events - before).toBe(30);
    expect(written.pop()!.ids).toHaveLength(30);
  });
});
