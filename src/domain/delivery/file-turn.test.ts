import { describe, expect, it } from 'vitest';
import type { DeliveryEvent, DestinationRecord, FileMaker, FilePlan, FileSender, OutgoingFile } from '../../stores/port-destinations.js';
import type { CourierDestination, CourierReads } from './courier.js';
import { eventJson } from './batch.js';
import { FEEDER_GONE_MS, FED_FILES, FILE_EVENTS, FileFeeds, type MadeFiles, fileTurn } from './file-turn.js';

const ev = (seq: number): DeliveryEvent => ({
  seq, id: `evt_${seq}`, sourceId: 'src_a', event: 'paid', distinctId: 'u', anonymousId: null,
  personId: 'per_1', sessionId: null, timestamp: 1_795_000_000_000 + seq, receivedAt: 1_795_000_000_000 + seq, insertId: null, properties: '{"n":1}',
});

/** A store of `n` events whose reads are counted, one event at a time. */
function store(n: number) {
  const events = Array.from({ length: n }, (_, i) => ev(i + 1));
  const reads = { events: 0, counts: 0 };
  const past = (after: number, upTo: number) => events.filter((e) => e.seq > after && e.seq <= upTo);
  const r: CourierReads = {
    get: async () => null as DestinationRecord | null,
    async read(_p, after, upTo, limit) {
      const found = past(after, upTo).slice(0, limit);
      reads.events += found.length;
      return { events: found, through: found.length === limit ? found.at(-1)!.seq : upTo };
    },
    countPast: async (_d, after, upTo, cap) => {
      reads.counts++;
      return Math.min(past(after, upTo).length, cap);
    },
    oldestPast: async (_d, after, upTo) => past(after, upTo)[0]?.receivedAt ?? null,
  };
  const erase = (seq: number) => events.splice(events.findIndex((e) => e.seq === seq), 1);
  /** What a destination that takes every event reads past `after` up to `through`, fed to `fed` as the courier feeds it. */
  const readBy = (feeds: FileFeeds, after: number, through: number, now = early()) => {
    const found = past(after, through);
    const json = found.map((e) => eventJson(e, 'prj_1'));
    feeds.feed('prj_1', after, through, found, json, json.map((j) => Buffer.byteLength(j) + 1), now);
  };
  return { r, reads, erase, readBy };
}

/** A sender whose files are the ids of their events, kept instead of written. */
function sender(fedAsRead = false) {
  const written: { plan: FilePlan; ids: string[] }[] = [];
  const s: FileSender = {
    everyMs: 1000,
    fedAsRead,
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

const d = (file: FilePlan | null = null, more: Partial<CourierDestination> = {}): CourierDestination => ({
  id: 'dst_1', projectId: 'prj_1', kind: 's3', config: {}, sources: [], events: [], generation: 0, file, ...more,
});
const early = () => 1_795_000_000_000;
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

describe('a file fed by what another destination of its project reads', () => {
  const ids = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `evt_${from + i}`);

  it('is begun while it is not due, takes the events read past its cursor, and is read from the store only past them once due', async () => {
    const { r, reads, readBy } = store(300);
    const { s, written } = sender(true);
    const made: MadeFiles = new Map();
    const fed = new FileFeeds();
    // Another destination here reads the project (nothing past the cursor yet).
    readBy(fed, 0, 0);
    expect(await fileTurn(r, s, d(), 0, 100, early, never, made, fed)).toMatchObject({ idleMs: expect.any(Number) });
    expect(fed.get('dst_1')).toMatchObject({ after: 0, through: 0, count: 0 });
    readBy(fed, 0, 120);
    readBy(fed, 150, 200); // past where the file has got to: not taken
    readBy(fed, 100, 150); // partly in it already: the rest taken
    expect(fed.get('dst_1')).toMatchObject({ through: 150, count: 150 });
    const before = reads.events;
    const planned = (await fileTurn(r, s, d(), 0, 250, late, never, made, fed)).planned!;
    expect(reads.events - before).toBe(100);
    expect(planned).toEqual({ generation: 0, after: 0, through: 250, first: 1, last: 250, at: ev(1).receivedAt });
    expect(fed.get('dst_1')).toBeUndefined();
    expect(await fileTurn(r, s, d(planned), 0, 250, late, never, made, fed)).toMatchObject({ through: 250, events: 250 });
    expect(written.pop()!.ids).toEqual(ids(1, 250));
  });

  it('begun behind what other destinations have read, reads up to there first, and is then fed from where they are', async () => {
    const { r, reads, readBy } = store(400);
    const { s, written } = sender(true);
    const made: MadeFiles = new Map();
    const fed = new FileFeeds();
    readBy(fed, 0, 100);
    readBy(fed, 100, 250);
    const before = reads.events;
    await fileTurn(r, s, d(), 50, 250, early, never, made, fed);
    expect(reads.events - before).toBe(200);
    expect(fed.get('dst_1')).toMatchObject({ after: 50, through: 250, count: 200, catchingUp: false });
    readBy(fed, 250, 400);
    const planned = (await fileTurn(r, s, d(), 50, 400, late, never, made, fed)).planned!;
    expect(reads.events - before).toBe(200);
    expect(planned).toMatchObject({ after: 50, through: 400, first: 51, last: 400 });
    await fileTurn(r, s, d(planned), 50, 400, late, never, made, fed);
    expect(written.pop()!.ids).toEqual(ids(51, 400));
  });

  it('catches up 10,000 events a turn at most, then is fed; and is let go when its cursor moves past a range with none', async () => {
    const { r, reads, readBy } = store(30_000);
    const { s } = sender(true);
    const fed = new FileFeeds();
    readBy(fed, 0, 25_000);
    const before = reads.events;
    for (const through of [10_000, 20_000, 25_000]) {
      await fileTurn(r, s, d(), 0, 25_000, early, never, new Map(), fed);
      expect(fed.get('dst_1')).toMatchObject({ through, catchingUp: false });
    }
    expect(reads.events - before).toBe(25_000);
    readBy(fed, 25_000, 30_000);
    expect(fed.get('dst_1')).toMatchObject({ through: 30_000, count: 30_000 });
    await fileTurn(r, s, d(), 30_000, 30_000, early, never, new Map(), fed);
    expect(fed.get('dst_1')).toBeUndefined();
  });

  it('reaches as far as it was fed, past the head its turn was given', async () => {
    const { r, readBy } = store(300);
    const { s } = sender(true);
    const fed = new FileFeeds();
    readBy(fed, 0, 0);
    await fileTurn(r, s, d(), 0, 100, early, never, new Map(), fed);
    readBy(fed, 0, 280);
    expect((await fileTurn(r, s, d(), 0, 200, late, never, new Map(), fed)).planned).toMatchObject({ through: 280, last: 280 });
  });

  it('is due once fed full, without a count of its range, and ends at the event that filled it', async () => {
    const { r, reads, readBy } = store(FILE_EVENTS + 100);
    const { s } = sender(true);
    const fed = new FileFeeds();
    readBy(fed, 0, 0);
    await fileTurn(r, s, d(), 0, 10, early, never, new Map(), fed);
    readBy(fed, 0, FILE_EVENTS + 100);
    const counts = reads.counts;
    const before = reads.events;
    const turn = await fileTurn(r, s, d(), 0, FILE_EVENTS + 100, early, never, new Map(), fed);
    expect(turn.planned).toMatchObject({ after: 0, through: FILE_EVENTS, last: FILE_EVENTS });
    expect(reads.counts).toBe(counts);
    expect(reads.events).toBe(before);
  });

  it('leaves out an event erased after it was fed: the file is made again from the store before it is written', async () => {
    const { r, erase, readBy } = store(50);
    const { s, written } = sender(true);
    const made: MadeFiles = new Map();
    const fed = new FileFeeds();
    readBy(fed, 0, 0);
    await fileTurn(r, s, d(), 0, 50, early, never, made, fed);
    readBy(fed, 0, 50);
    const planned = (await fileTurn(r, s, d(), 0, 50, late, never, made, fed)).planned!;
    erase(7);
    expect(await fileTurn(r, s, d(planned), 0, 50, late, never, made, fed)).toMatchObject({ through: 50, events: 49 });
    expect(written.pop()!.ids).toEqual(ids(1, 50).filter((id) => id !== 'evt_7'));
  });

  it('is not begun with nothing here reading its project lately, for a destination that filters, for a sender that cannot be fed, or past FED_FILES at once; and is dropped when the cursor or generation moves', async () => {
    const { r, readBy } = store(50);
    const fed = new FileFeeds();
    await fileTurn(r, sender(true).s, d(), 0, 50, early, never, new Map(), fed);
    expect(fed.get('dst_1')).toBeUndefined();
    readBy(fed, 0, 0, early() - FEEDER_GONE_MS);
    await fileTurn(r, sender(true).s, d(), 0, 50, early, never, new Map(), fed);
    expect(fed.get('dst_1')).toBeUndefined();
    readBy(fed, 0, 0);
    await fileTurn(r, sender(true).s, d(null, { events: ['paid'] }), 0, 50, early, never, new Map(), fed);
    await fileTurn(r, sender(false).s, d(), 0, 50, early, never, new Map(), fed);
    expect(fed.size).toBe(0);
    for (let i = 0; i < FED_FILES; i++) await fileTurn(r, sender(true).s, d(null, { id: `dst_${i + 10}` }), 0, 50, early, never, new Map(), fed);
    await fileTurn(r, sender(true).s, d(), 0, 50, early, never, new Map(), fed);
    expect(fed.size).toBe(FED_FILES);
    expect(fed.get('dst_1')).toBeUndefined();
    for (let i = 0; i < FED_FILES; i++) fed.drop(`dst_${i + 10}`);

    const { s, written } = sender(true);
    const made: MadeFiles = new Map();
    await fileTurn(r, s, d(), 0, 50, early, never, made, fed);
    readBy(fed, 0, 30);
    // Replayed meanwhile: the file fed for generation 0 is not the next one.
    const planned = (await fileTurn(r, s, d(null, { generation: 1 }), 0, 50, late, never, made, fed)).planned!;
    expect(planned).toMatchObject({ generation: 1, through: 50 });
    expect(await fileTurn(r, s, d(planned, { generation: 1 }), 0, 50, late, never, made, fed)).toMatchObject({ events: 50 });
    expect(written.pop()!.ids).toEqual(ids(1, 50));
    await fileTurn(r, s, d(), 10, 50, early, never, made, fed);
    expect(fed.get('dst_1')).toMatchObject({ after: 10, through: 30, count: 20 });
  });

  it('forgets the projects not read lately, but not one a file is fed from', async () => {
    const { r, readBy } = store(50);
    const fed = new FileFeeds();
    const other = (projectId: string, now: number) => fed.feed(projectId, 0, 10, [], [], [], now);
    for (let i = 0; i < 100; i++) other(`prj_gone_${i}`, early());
    readBy(fed, 0, 0);
    await fileTurn(r, sender(true).s, d(), 0, 50, early, never, new Map(), fed);
    expect(fed.get('dst_1')).toBeDefined();
    expect(fed.projectsReached).toBe(101);
    // Read again within FEEDER_GONE_MS: nothing is forgotten yet.
    other('prj_new', early() + FEEDER_GONE_MS - 1);
    expect(fed.projectsReached).toBe(102);
    other('prj_new', early() + FEEDER_GONE_MS);
    // Only what was read lately stays, and prj_1, whose file is still fed.
    expect(fed.projectsReached).toBe(2);
    readBy(fed, 0, 40, early() + FEEDER_GONE_MS);
    expect(fed.get('dst_1')).toMatchObject({ through: 40, count: 40 });
    fed.drop('dst_1');
    other('prj_new', early() + 3 * FEEDER_GONE_MS);
    expect(fed.projectsReached).toBe(1);
  });
});
