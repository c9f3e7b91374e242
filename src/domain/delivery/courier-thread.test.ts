import { EventEmitter } from 'node:events';
import { expect, it } from 'vitest';
import type { DeliveryEvent, DeliverySender, OutgoingBatch, SendOutcome } from '../../stores/port-destinations.js';
import { type CourierPort, ThreadCourier, serveCourier } from './courier-thread.js';
import { type CourierDestination, LocalCourier } from './courier.js';

/** Two ends of a channel, each delivering the other's messages a turn later, as a worker's ports do. */
function channel() {
  const thread = new EventEmitter();
  const parent = new EventEmitter();
  const port: CourierPort & EventEmitter = Object.assign(thread, {
    postMessage: (m: unknown) => setImmediate(() => parent.emit('message', structuredClone(m))),
    terminate: async () => {
      thread.emit('exit', 1);
      return 1;
    },
  });
  const inside = { postMessage: (m: unknown) => setImmediate(() => thread.emit('message', structuredClone(m))), on: parent.on.bind(parent) };
  return { port, inside };
}

const ev = (seq: number): DeliveryEvent => ({
  seq, id: `id-${seq}`, sourceId: 'src_a', event: 'paid', distinctId: 'u', anonymousId: null, personId: 'per_1',
  sessionId: null, timestamp: 1000 + seq, receivedAt: 2000 + seq, insertId: null, properties: '{}',
});
const d: CourierDestination = { id: 'dst_1', projectId: 'prj_1', kind: 'webhook', url: 'http://r/in', table: null, sources: [], events: ['paid'], secret: 's', generation: 0 };

/** A sender that holds each batch until told how it went, and says when a send was stopped. */
class HeldSender implements DeliverySender {
  sent: OutgoingBatch[] = [];
  closed = 0;
  private settle: ((o: SendOutcome) => void) | null = null;
  private arrived: (() => void) | null = null;
  send(b: OutgoingBatch, signal: AbortSignal): Promise<SendOutcome> {
    this.sent.push(b);
    this.arrived?.();
    return new Promise((resolve) => {
      this.settle = resolve;
      signal.addEventListener('abort', () => resolve({ ok: false, error: 'Stopped.', retryAfterMs: null }), { once: true });
    });
  }
  nextSend(): Promise<void> {
    return new Promise((r) => (this.arrived = r));
  }
  answer(o: SendOutcome) {
    this.settle!(o);
  }
  async close() {
    this.closed++;
  }
}

function world(events: DeliveryEvent[]) {
  const sender = new HeldSender();
  const reads = {
    read: async (_p: string, after: number, upTo: number, limit: number) => {
      const found = events.filter((e) => e.seq > after && e.seq <= upTo).slice(0, limit);
      return { events: found, through: found.length === limit ? found.at(-1)!.seq : upTo };
    },
    countPast: async (_d: unknown, after: number, upTo: number) => events.filter((e) => e.seq > after && e.seq <= upTo).length,
  };
  const starts: ReturnType<typeof channel>[] = [];
  const courier = new ThreadCourier(() => {
    const c = channel();
    serveCourier(c.inside, new LocalCourier(reads, () => sender));
    starts.push(c);
    return c.port;
  });
  return { sender, courier, starts };
}

it('sends the next batch on the thread and says how far it reached, what it sent and when the oldest arrived', async () => {
  const w = world([ev(1), { ...ev(2), event: 'viewed' }, ev(3)]);
  const turn = w.courier.next(d, 0, 10, new AbortController().signal);
  await w.sender.nextSend();
  expect(w.sender.sent[0]!.events.map((e) => e.seq)).toEqual([1, 3]);
  w.sender.answer({ ok: true });
  expect(await turn).toEqual({ through: 10, events: 2, oldestAt: 2001, outcome: { ok: true } });
  expect(await w.courier.next(d, 10, 20, new AbortController().signal)).toEqual({ through: 20, events: 0, oldestAt: null, outcome: null });
  expect(await w.courier.countPast(d, 0, 10, 100)).toBe(3);
  await w.courier.release(d.id);
  expect(w.sender.closed).toBe(1);
  expect(w.starts).toHaveLength(1);
});

it('stops a send in flight when the caller stops', async () => {
  const w = world([ev(1)]);
  const stop = new AbortController();
  const turn = w.courier.next(d, 0, 10, stop.signal);
  await w.sender.nextSend();
  stop.abort();
  expect(await turn).toMatchObject({ events: 1, outcome: { ok: false, error: 'Stopped.' } });
});

it('fails what was in flight when the thread dies, and starts another at the next request', async () => {
  const w = world([ev(1)]);
  const turn = w.courier.next(d, 0, 10, new AbortController().signal);
  await w.sender.nextSend();
  w.starts[0]!.port.emit('exit', 1);
  await expect(turn).rejects.toThrow('The delivery thread stopped (exit code 1).');
  const again = w.courier.next(d, 0, 10, new AbortController().signal);
  await w.sender.nextSend();
  w.sender.answer({ ok: true });
  expect(await again).toMatchObject({ events: 1, outcome: { ok: true } });
  expect(w.starts).toHaveLength(2);
});

it('answers a failed read with its message, and the thread goes on', async () => {
  const sender = new HeldSender();
  const reads = { read: async () => Promise.reject(new Error('database is locked')), countPast: async () => 0 };
  const courier = new ThreadCourier(() => {
    const c = channel();
    serveCourier(c.inside, new LocalCourier(reads, () => sender));
    return c.port;
  });
  await expect(courier.next(d, 0, 10, new AbortController().signal)).rejects.toThrow('database is locked');
  expect(await courier.countPast(d, 0, 10, 5)).toBe(0);
  await courier.close();
});
