import { EventEmitter, getEventListeners } from 'node:events';
import { expect, it } from 'vitest';
import type { DeliveryEvent, DeliverySender, DestinationRecord, DestinationStore, OutgoingBatch, SendOutcome } from '../../stores/port-destinations.js';
import { FIRST_RETRY_MS } from './backoff.js';
import { type CourierPort, RESTART_FIRST_MS, RESTART_MOST_MS, RemoteCourier, YOUNG_DEATH_MS, serveCourier } from './courier-remote.js';
import { type CourierDestination, LocalCourier } from './courier.js';
import { DEFAULT_TIMING, Deliverer } from './deliverer.js';

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
const d: CourierDestination = { id: 'dst_1', projectId: 'prj_1', kind: 'test', config: { url: 'http://r/in' }, sources: [], events: ['paid'], generation: 0, file: null };
/** The destination as the store keeps it. */
const kept: DestinationRecord = { ...d, paused: false, cursor: 0, delivered: 0, lastError: null, lastDeliveredAt: null, createdAt: 0, pausedReason: null, file: null };

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
  /** The destination as the store has it now: a test deletes or pauses it here. */
  const store = { now: kept as DestinationRecord | null };
  const reads = {
    get: async () => store.now,
    read: async (_p: string, after: number, upTo: number, limit: number) => {
      const found = events.filter((e) => e.seq > after && e.seq <= upTo).slice(0, limit);
      return { events: found, through: found.length === limit ? found.at(-1)!.seq : upTo };
    },
    countPast: async (_d: unknown, after: number, upTo: number) => events.filter((e) => e.seq > after && e.seq <= upTo).length,
    oldestPast: async (_d: unknown, after: number) => events.find((e) => e.seq > after)?.receivedAt ?? null,
  };
  const starts: ReturnType<typeof channel>[] = [];
  const clock = { now: 1_000_000 };
  const deaths: string[] = [];
  const courier = new RemoteCourier(
    () => {
      const c = channel();
      serveCourier(c.inside, new LocalCourier(reads, () => sender));
      starts.push(c);
      return c.port;
    },
    { clock: () => clock.now, died: (why) => deaths.push(why) },
  );
  return { sender, courier, starts, store, clock, deaths };
}

it('sends the batches on the delivery side, one after another, and says how far it reached and what it delivered', async () => {
  const many = Array.from({ length: 1200 }, (_, i) => (i === 1 ? { ...ev(2), event: 'viewed' } : ev(i + 1)));
  const w = world(many);
  const turn = w.courier.next(d, 0, 1300, new AbortController().signal);
  for (let i = 0; i < 3; i++) {
    await w.sender.nextSend();
    w.sender.answer({ ok: true });
  }
  expect(await turn).toEqual({ through: 1300, batches: 3, events: 1199, failure: null });
  // A read takes 500 positions; the one event the destination does not take leaves 499 in the first batch.
  expect(w.sender.sent.map((b) => b.events.length)).toEqual([499, 500, 200]);
  expect(w.sender.sent[0]!.events.slice(0, 2).map((e) => e.seq)).toEqual([1, 3]);
  // Each batch starts where the one before ended: none skipped, none twice.
  expect(w.sender.sent.flatMap((b) => b.events.map((e) => e.seq))).toEqual(many.filter((e) => e.event === 'paid').map((e) => e.seq));
  expect(await w.courier.next(d, 1300, 1400, new AbortController().signal)).toEqual({ through: 1400, batches: 0, events: 0, failure: null });
  expect(await w.courier.lag(d, 0, 10, 100)).toEqual({ events: 10, oldestAt: 2001 });
  expect(await w.courier.lag(d, 1300, 1400, 100)).toEqual({ events: 0, oldestAt: null });
  await w.courier.release(d.id);
  expect(w.sender.closed).toBe(1);
  expect(w.starts).toHaveLength(1);
});

it('ends a turn on the first failure, keeping what it delivered before it', async () => {
  const w = world(Array.from({ length: 700 }, (_, i) => ev(i + 1)));
  const turn = w.courier.next(d, 0, 800, new AbortController().signal);
  await w.sender.nextSend();
  w.sender.answer({ ok: true });
  await w.sender.nextSend();
  w.sender.answer({ ok: false, error: 'The receiver answered 503.', retryAfterMs: 7000 });
  expect(await turn).toEqual({ through: 500, batches: 1, events: 500, failure: { ok: false, error: 'The receiver answered 503.', retryAfterMs: 7000 } });
});

it('a deleted destination (its project deleted) gets no further batch of the turn in flight; nor does a paused or replayed one', async () => {
  for (const change of [null, { ...kept, paused: true }, { ...kept, generation: 1 }]) {
    const w = world(Array.from({ length: 1200 }, (_, i) => ev(i + 1)));
    const turn = w.courier.next(d, 0, 1300, new AbortController().signal);
    await w.sender.nextSend();
    w.store.now = change;
    w.sender.answer({ ok: true });
    expect(await turn).toEqual({ through: 500, batches: 1, events: 500, failure: null });
    expect(w.sender.sent).toHaveLength(1);
  }
});

it('stops a send in flight when the caller stops', async () => {
  const w = world([ev(1)]);
  const stop = new AbortController();
  const turn = w.courier.next(d, 0, 10, stop.signal);
  await w.sender.nextSend();
  stop.abort();
  expect(await turn).toMatchObject({ through: 0, batches: 0, failure: { ok: false, error: 'Stopped.' } });
});

it('fails what was in flight when the delivery process dies, and starts another at the next request', async () => {
  const w = world([ev(1)]);
  const turn = w.courier.next(d, 0, 10, new AbortController().signal);
  await w.sender.nextSend();
  w.starts[0]!.port.emit('exit', 1);
  await expect(turn).rejects.toThrow('The delivery process stopped (exit code 1).');
  expect(w.deaths).toEqual(['The delivery process stopped (exit code 1).']);
  // It died young: the next starts only after a wait.
  w.clock.now += RESTART_FIRST_MS;
  const again = w.courier.next(d, 0, 10, new AbortController().signal);
  await w.sender.nextSend();
  w.sender.answer({ ok: true });
  expect(await again).toMatchObject({ through: 10, events: 1, failure: null });
  expect(w.starts).toHaveLength(2);
});

it('starts a process that keeps dying young again only after a wait that doubles, up to a minute, and at once after one that lived', async () => {
  const w = world([ev(1)]);
  /** A request that starts a process if one may start: 'started', or why it was refused. */
  const tryLag = () => w.courier.lag(d, 0, 10, 5).then(() => 'started', (e: Error) => e.message);
  expect(await tryLag()).toBe('started');
  w.starts.at(-1)!.port.emit('exit', 1);
  const waits: number[] = [];
  for (let k = 0; k < 8; k++) {
    let waited = 0;
    for (let r = await tryLag(); r !== 'started'; r = await tryLag()) {
      expect(r).toMatch(/^The delivery process stopped \(exit code 1\)\. It is started again in \d+ s\.$/);
      w.clock.now += 1_000;
      waited += 1_000;
    }
    waits.push(waited);
    w.starts.at(-1)!.port.emit('exit', 1);
  }
  expect(waits).toEqual([1, 2, 4, 8, 16, 32, 60, 60].map((s) => Math.min(s * RESTART_FIRST_MS, RESTART_MOST_MS)));
  expect(w.deaths).toHaveLength(9);
  // One that lived past YOUNG_DEATH_MS is followed by another at once.
  w.clock.now += RESTART_MOST_MS;
  expect(await tryLag()).toBe('started');
  w.clock.now += YOUNG_DEATH_MS;
  w.starts.at(-1)!.port.emit('exit', 1);
  expect(await tryLag()).toBe('started');
});

it('starts none once closed: a request after close fails', async () => {
  const w = world([ev(1)]);
  await w.courier.close();
  await expect(w.courier.lag(d, 0, 10, 5)).rejects.toThrow('Delivery stopped.');
  expect(w.starts).toHaveLength(0);
});

it('answers a failed read with its message, and the delivery process goes on', async () => {
  const sender = new HeldSender();
  const reads = { get: async () => kept, read: async () => Promise.reject(new Error('database is locked')), countPast: async () => 0, oldestPast: async () => null };
  const courier = new RemoteCourier(() => {
    const c = channel();
    serveCourier(c.inside, new LocalCourier(reads, () => sender));
    return c.port;
  });
  await expect(courier.next(d, 0, 10, new AbortController().signal)).rejects.toThrow('database is locked');
  expect(await courier.lag(d, 0, 10, 5)).toEqual({ events: 0, oldestAt: null });
  await courier.close();
});

it('leaves no abort listener on the caller\'s signal once a request is answered (they piled up one a turn)', async () => {
  const w = world([ev(1)]);
  const signal = new AbortController().signal;
  for (let i = 0; i < 50; i++) {
    const turn = w.courier.next(d, 0, 10, signal);
    await w.sender.nextSend();
    w.sender.answer(i % 2 === 0 ? { ok: true } : { ok: false, error: 'The receiver answered 503.', retryAfterMs: 0 });
    await turn;
  }
  await w.courier.lag(d, 0, 10, 5);
  expect(getEventListeners(signal, 'abort')).toHaveLength(0);
  // A delivery process that dies fails what it held: that answer, too, takes its listener away.
  const lost = w.courier.next(d, 0, 10, signal);
  await w.sender.nextSend();
  w.starts[0]!.port.emit('exit', 1);
  await expect(lost).rejects.toThrow('stopped');
  expect(getEventListeners(signal, 'abort')).toHaveLength(0);
});

/** A sender that answers every batch at once, the same way. */
class AnsweringSender implements DeliverySender {
  sent = 0;
  constructor(private readonly outcome: SendOutcome) {}
  async send(): Promise<SendOutcome> {
    this.sent++;
    return this.outcome;
  }
  async close() {}
}

/**
 * A Deliverer over a RemoteCourier, on a destination whose project gains an
 * event every other look at its head; its waits return at once and are
 * recorded with the abort listeners its signal holds then. It stops after `turns` waits.
 */
async function deliverTurns(outcome: SendOutcome, turns: number) {
  const sender = new AnsweringSender(outcome);
  const reads = {
    get: async () => kept,
    read: async (_p: string, after: number, upTo: number, limit: number) => {
      const found = Array.from({ length: Math.max(0, Math.min(upTo, after + limit) - after) }, (_, i) => ev(after + i + 1));
      return { events: found, through: Math.min(upTo, after + limit) };
    },
    countPast: async () => 0,
    oldestPast: async () => null,
  };
  const courier = new RemoteCourier(() => {
    const c = channel();
    serveCourier(c.inside, new LocalCourier(reads, () => sender));
    return c.port;
  });
  let looks = 0;
  const store: Pick<DestinationStore, 'get' | 'head' | 'advance' | 'failed' | 'takeLease'> = {
    get: async () => kept,
    head: async () => Math.floor((++looks + 1) / 2),
    advance: async () => true,
    failed: async () => true,
    takeLease: async () => true,
  };
  const waits: { ms: number; listeners: number }[] = [];
  const deliverer = new Deliverer(kept, {
    store: store as DestinationStore, courier, holder: 'srv_test', clock: () => 0, timing: { ...DEFAULT_TIMING, renewMs: 3_600_000 },
    self: { baseUrl: null, port: null },
    kinds: [],
    wait: async (ms, signal) => {
      waits.push({ ms, listeners: getEventListeners(signal, 'abort').length });
      if (waits.length === turns) deliverer.stop();
    },
  });
  await deliverer.run();
  await courier.close();
  return { waits, sent: sender.sent };
}

it('a Deliverer keeps no abort listener per turn, with a healthy receiver and with one answering 503 with Retry-After: 0', async () => {
  const healthy = await deliverTurns({ ok: true }, 500);
  expect(healthy.sent).toBeGreaterThanOrEqual(499);
  expect(Math.max(...healthy.waits.map((x) => x.listeners))).toBe(0);

  const refusing = await deliverTurns({ ok: false, error: 'The receiver answered 503.', retryAfterMs: 0 }, 500);
  expect(refusing.sent).toBe(500);
  expect(Math.max(...refusing.waits.map((x) => x.listeners))).toBe(0);
});

it('a Deliverer waits a second at least before trying again a receiver that answers 503 with Retry-After: 0', async () => {
  const { waits } = await deliverTurns({ ok: false, error: 'The receiver answered 503.', retryAfterMs: 0 }, 20);
  expect(waits).toHaveLength(20);
  for (const w of waits) expect(w.ms).toBeGreaterThanOrEqual(FIRST_RETRY_MS);
});
