import { expect, it } from 'vitest';
import type { DeliveryEvent, DeliverySender, DestinationRecord, FileMaker, FilePlan, FileSender } from '../../stores/port-destinations.js';
import { type CourierDestination, type CourierReads, LocalCourier } from './courier.js';

const T0 = 1_795_000_000_000;
const ev = (seq: number): DeliveryEvent => ({
  seq, id: `evt_${seq}`, sourceId: 'src_a', event: 'paid', distinctId: 'u', anonymousId: null, personId: 'per_1',
  sessionId: null, timestamp: T0 + seq, receivedAt: T0 + seq, insertId: null, properties: '{"n":1}',
});
const dest = (id: string, more: Partial<CourierDestination> = {}): CourierDestination => ({
  id, projectId: 'prj_1', kind: id, config: {}, sources: [], events: [], generation: 0, file: null, ...more,
});

/** A project of `n` events, a webhook-like destination and a file destination on it, in one courier; its reads counted. */
function world(n: number, webhook: CourierDestination) {
  const events = Array.from({ length: n }, (_, i) => ev(i + 1));
  const read = { events: 0 };
  const past = (after: number, upTo: number) => events.filter((e) => e.seq > after && e.seq <= upTo);
  const reads: CourierReads = {
    get: async (id) => ({ ...dest(id), paused: false, cursor: 0 }) as unknown as DestinationRecord,
    async read(_p, after, upTo, limit) {
      const found = past(after, upTo).slice(0, limit);
      read.events += found.length;
      return { events: found, through: found.length === limit ? found.at(-1)!.seq : upTo };
    },
    countPast: async (_d, after, upTo, cap) => Math.min(past(after, upTo).length, cap),
    oldestPast: async (_d, after, upTo) => past(after, upTo)[0]?.receivedAt ?? null,
  };
  const sent: string[][] = [];
  const batches: DeliverySender = {
    send: async (b) => {
      sent.push(b.events.map((e) => e.id));
      return { ok: true };
    },
    close: async () => undefined,
  };
  const written: string[][] = [];
  const files: FileSender = {
    everyMs: 1000,
    fedAsRead: true,
    newFile: async (): Promise<FileMaker> => {
      const lines: string[] = [];
      return { add: (_e, json) => lines.push(json), finish: async () => Buffer.from(lines.join('\n')) };
    },
    writeFile: async (f) => {
      written.push(f.body.toString().split('\n').map((l) => (JSON.parse(l) as { id: string }).id));
      return { ok: true };
    },
    close: async () => undefined,
  };
  const clock = { now: T0 };
  const courier = new LocalCourier(reads, (d) => (d.id === webhook.id ? batches : files), () => clock.now);
  return { courier, read, sent, written, clock };
}

const never = new AbortController().signal;

it('makes a file of the events another destination of the project read, reading the store only past them', async () => {
  const webhook = dest('webhook');
  const file = dest('file');
  const w = world(1200, webhook);
  expect(await w.courier.next(webhook, 0, 500, never)).toMatchObject({ through: 500, events: 500 });
  // Begun behind what the webhook read: it reads up to there, then takes the webhook's batches.
  let before = w.read.events;
  expect(await w.courier.next(file, 0, 500, never)).toMatchObject({ idleMs: expect.any(Number) });
  expect(w.read.events - before).toBe(500);
  expect(await w.courier.next(webhook, 500, 1000, never)).toMatchObject({ through: 1000, events: 500 });
  w.clock.now = T0 + 60_000;
  before = w.read.events;
  const planned = (await w.courier.next(file, 0, 1200, never)).planned as FilePlan;
  expect(w.read.events - before).toBe(200);
  expect(planned).toMatchObject({ after: 0, through: 1200, first: 1, last: 1200 });
  expect(await w.courier.next({ ...file, file: planned }, 0, 1200, never)).toMatchObject({ through: 1200, events: 1200 });
  expect(w.written).toEqual([Array.from({ length: 1200 }, (_, i) => `evt_${i + 1}`)]);
});

it('feeds no file from a destination that filters: what it read is not every event of the project', async () => {
  const webhook = dest('webhook', { sources: ['src_a'] });
  const file = dest('file');
  const w = world(1200, webhook);
  await w.courier.next(webhook, 0, 500, never);
  await w.courier.next(file, 0, 500, never);
  await w.courier.next(webhook, 500, 1000, never);
  w.clock.now = T0 + 60_000;
  const before = w.read.events;
  expect((await w.courier.next(file, 0, 1200, never)).planned).toMatchObject({ through: 1200 });
  expect(w.read.events - before).toBe(1200);
});
