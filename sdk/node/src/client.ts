import { randomUUID } from 'node:crypto';
import { type Verdict, toResult } from './answer.js';
import { type InletOptions, type Settings, backoffMs, settle } from './options.js';
import { Pacer, type RateLimitWindow } from './pacer.js';
import { Timers } from './timers.js';
import { MAX_BODY_BYTES, type TransportOptions, attempt, encodeBatch } from './transport.js';
import {
  type AliasMessage,
  ClosedError,
  type GroupMessage,
  type IdentifyMessage,
  type ItemResult,
  QueueFullError,
  type Report,
  type TrackMessage,
  type WireItem,
  addToReport,
  emptyReport,
} from './types.js';

const VERSION = '0.1.0';

/**
 * Clients not closed yet. When the event loop runs dry (a script at its end
 * that never called flush()), Node emits beforeExit, and each flushes what it
 * still holds: the process then lives until those items have their outcome.
 * process.exit() and signals skip beforeExit; there, await flush() or close().
 */
const open = new Set<Inlet>();
let exitHookInstalled = false;

function flushOnBeforeExit(): void {
  for (const c of open) if (c.pending > 0) void c.flush();
}

/** One item from track() to its final outcome. */
interface Pending {
  /** The item as sent, serialised when it was queued. */
  json: string;
  bytes: number;
  insertId: string;
  attempts: number;
  /** The flush() that reports this item, if one was called while it was pending. */
  waiter: Waiter | null;
}

interface Waiter {
  remaining: number;
  report: Report;
  done: () => void;
}

/** One spell of the server out of reach: its signal ends what is held when it lasts too long. */
interface Outage {
  stop: AbortController;
  /** What the attempt that gave up met, for the items that fail without an attempt of their own. */
  last: LastTry;
}

/** The last answer of a batch that is still being retried, for its `failed` result. */
interface LastTry {
  status?: number;
  code?: string;
  error?: string;
}

/**
 * Sends track, identify, group and alias items to Inlet in batches, retries what can be
 * retried with the same insert_ids, and tells what became of every item.
 */
export class Inlet {
  private readonly s: Settings;
  private readonly url: string;
  private readonly timers: Timers;
  /** Aborted when close() runs out of time: every attempt and wait ends at once. */
  private readonly hard = new AbortController();
  /** Ended when the server has been out of reach for unreachableTimeoutMs; then replaced, for what is queued later. */
  private outage: Outage = { stop: new AbortController(), last: {} };
  /** Since when every attempt has met no answer or a 5xx; null while the server answers. */
  private troubleSince: number | null = null;
  /** Pacing waits, each ended by the next answer. */
  private readonly wakers = new Set<() => void>();
  private readonly transport: TransportOptions;
  private readonly queue: Pending[] = [];
  /** Items queued or in flight, without a final outcome yet. */
  private readonly unsettled = new Set<Pending>();
  /** Bytes of JSON of the unsettled items, against maxQueueBytes. */
  private unsettledBytes = 0;
  /** drain() calls waiting for fewer than maxQueue unsettled items. */
  private readonly drains: (() => void)[] = [];
  private readonly pacer = new Pacer();
  private sending = 0;
  private flushing = 0;
  private intervalDue = false;
  private cancelInterval: (() => void) | null = null;
  private lastFlush: Promise<unknown> = Promise.resolve();
  /** Outcomes no flush() waits for, reported by the next flush(). */
  private unclaimed = emptyReport();
  private closing: Promise<Report> | null = null;

  constructor(options: InletOptions) {
    this.s = settle(options);
    this.timers = new Timers(this.s.clock);
    this.url = new URL(this.s.path, this.s.baseUrl.endsWith('/') ? this.s.baseUrl : `${this.s.baseUrl}/`).toString();
    this.transport = { url: this.url, key: this.s.key, gzip: this.s.gzip, timeoutMs: this.s.timeoutMs, userAgent: `inlet-node/${VERSION}` };
    open.add(this);
    if (!exitHookInstalled) {
      exitHookInstalled = true;
      process.on('beforeExit', flushOnBeforeExit);
    }
  }

  /**
   * Queues an event. Returns false once maxQueue items are held (await drain()
   * before sending more), true otherwise. Throws QueueFullError past
   * maxQueueBytes, ClosedError after close(), a TypeError for an item JSON
   * cannot hold (a BigInt, a cycle); never on network trouble.
   */
  track(m: TrackMessage): boolean {
    return this.enqueue({
      type: 'track',
      event: m.event,
      distinct_id: m.distinctId,
      anonymous_id: m.anonymousId,
      session_id: m.sessionId,
      properties: m.properties,
      timestamp: wireTime(m.timestamp),
      insert_id: m.insertId,
    });
  }

  /** Queues traits for a person (and set-once traits, and traits to remove). Returns and throws as track() does. */
  identify(m: IdentifyMessage): boolean {
    return this.enqueue({
      type: 'identify',
      distinct_id: m.distinctId,
      anonymous_id: m.anonymousId,
      properties: m.traits,
      set_once: m.setOnce,
      unset: m.unset,
      timestamp: wireTime(m.timestamp),
      insert_id: m.insertId,
    });
  }

  /** Queues a group's traits, and makes `distinctId` a member when given. Returns and throws as track() does. */
  group(m: GroupMessage): boolean {
    return this.enqueue({
      type: 'group',
      group_type: m.groupType,
      group_key: m.groupKey,
      properties: m.traits,
      distinct_id: m.distinctId,
      timestamp: wireTime(m.timestamp),
      insert_id: m.insertId,
    });
  }

  /** Queues an alias: `previousId` means the same person as `distinctId` from now on. Returns and throws as track() does. */
  alias(m: AliasMessage): boolean {
    return this.enqueue({
      type: 'alias',
      distinct_id: m.distinctId,
      previous_id: m.previousId,
      timestamp: wireTime(m.timestamp),
      insert_id: m.insertId,
    });
  }

  /**
   * Queues an item in the API's own shape (`event`, `distinct_id`, …), as read
   * from a file. An `insert_id` is added when it has none. Returns and throws
   * as track() does.
   */
  enqueue(item: WireItem): boolean {
    if (this.closing !== null) throw new ClosedError();
    const wire = dropUndefined(item);
    const props = wire.properties as Record<string, unknown> | undefined;
    const given = wire.insert_id ?? (typeof props === 'object' && props !== null ? props.$insert_id : undefined);
    if (given === undefined || given === null) wire.insert_id = randomUUID();
    // Serialised now: the bytes count against the cap, and later changes to the caller's objects are not sent.
    const json = JSON.stringify(wire);
    const bytes = Buffer.byteLength(json);
    if (this.unsettledBytes + bytes > this.s.maxQueueBytes) throw new QueueFullError(this.s.maxQueueBytes);
    const p: Pending = { json, bytes, insertId: String(wire.insert_id ?? given), attempts: 0, waiter: null };
    this.queue.push(p);
    this.unsettled.add(p);
    this.unsettledBytes += bytes;
    if (this.cancelInterval === null && this.queue.length < this.s.flushAt) {
      this.cancelInterval = this.timers.once(() => {
        this.cancelInterval = null;
        this.intervalDue = true;
        this.pump();
      }, this.s.flushIntervalMs);
    }
    this.pump();
    return this.unsettled.size < this.s.maxQueue;
  }

  /**
   * Resolves once fewer than maxQueue items are held (at once when that is so
   * already), as a stream's 'drain' does: a sender whose track() returned
   * false awaits it before sending more. Until then it keeps the process alive.
   */
  drain(): Promise<void> {
    if (this.unsettled.size < this.s.maxQueue) return Promise.resolve();
    this.timers.hold();
    this.pump();
    return new Promise((resolve) =>
      this.drains.push(() => {
        this.timers.release();
        resolve();
      }),
    );
  }

  /** Items held and not yet delivered (queued or in flight). */
  get pending(): number {
    return this.unsettled.size;
  }

  /** The project's rate-limit windows as the server last stated them (empty until an answer states one). */
  get rateLimits(): RateLimitWindow[] {
    return this.pacer.state(this.s.clock.now());
  }

  /**
   * Sends everything queued now and resolves once every item queued before the
   * call has its final outcome. The report also holds outcomes settled since
   * the previous flush(), so every item lands in exactly one report.
   */
  flush(): Promise<Report> {
    const report = this.unclaimed;
    this.unclaimed = emptyReport();
    let done!: () => void;
    const own = new Promise<void>((resolve) => (done = resolve));
    const waiter: Waiter = { remaining: 0, report, done };
    for (const p of this.unsettled) {
      if (p.waiter !== null) continue;
      p.waiter = waiter;
      waiter.remaining++;
    }
    if (waiter.remaining === 0) done();
    this.flushing++;
    this.timers.hold();
    this.pump();
    const previous = this.lastFlush;
    const result = Promise.all([previous, own]).then(() => {
      this.flushing--;
      this.timers.release();
      return report;
    });
    this.lastFlush = result;
    return result;
  }

  /**
   * Flushes and stops. Past `timeoutMs` (default closeTimeoutMs), attempts and
   * waits are cut short and every item not delivered is reported `failed`.
   * Later track()/identify() throw ClosedError.
   */
  close(opts: { timeoutMs?: number } = {}): Promise<Report> {
    if (this.closing !== null) return this.closing;
    open.delete(this);
    this.cancelInterval?.();
    this.cancelInterval = null;
    const flushed = this.flush();
    this.timers.hold();
    const cancel = this.timers.once(() => this.abandon(), opts.timeoutMs ?? this.s.closeTimeoutMs);
    this.closing = flushed.then((report) => {
      cancel();
      this.timers.release();
      return report;
    });
    return this.closing;
  }

  /** close() ran out of time: what is queued fails now, and what is in flight as soon as its attempt ends. */
  private abandon(): void {
    this.hard.abort();
    for (const p of this.queue.splice(0)) this.settle(p, toResult({ outcome: 'failed', error: 'closed before it was sent' }, p.insertId, p.attempts));
  }

  private pump(): void {
    while (
      this.sending < this.s.concurrency &&
      this.queue.length > 0 &&
      (this.queue.length >= this.s.flushAt || this.flushing > 0 || this.intervalDue || this.unsettled.size >= this.s.maxQueue)
    ) {
      const batch = this.queue.splice(0, this.s.flushAt);
      if (this.queue.length === 0) {
        this.intervalDue = false;
        this.cancelInterval?.();
        this.cancelInterval = null;
      }
      this.sending++;
      void this.deliver(batch).finally(() => {
        this.sending--;
        this.pump();
      });
    }
  }

  /**
   * Sends one batch until every item of it has a final outcome, in as many
   * requests as the server's limits make room for. Never rejects.
   */
  private async deliver(batch: Pending[]): Promise<void> {
    // Known to be refused with 413 before it is sent: split it here and save the round trip.
    if (requestBytes(batch) > MAX_BODY_BYTES) return this.split(batch, 'payload_too_large');
    const outage = this.outage;
    const signal = AbortSignal.any([this.hard.signal, outage.stop.signal]);
    let rest = batch;
    let last: LastTry = {};
    let retries = 0;
    while (rest.length > 0) {
      const grant = await this.paced(rest.length, signal);
      if (grant === null) return this.failAll(rest, this.cutShort(outage, last));
      const part = rest.slice(0, grant.items);
      const body = await encodeBatch(
        part.map((p) => p.json),
        this.s.gzip,
      );
      for (const p of part) p.attempts++;
      const { step, limits } = await attempt(this.transport, body!, part.length, signal);
      this.pacer.answered(grant.ticket, part.length, limits, this.s.clock.now());
      for (const wake of [...this.wakers]) wake();
      if (step.kind !== 'retry') {
        this.troubleSince = null;
        rest = rest.slice(part.length);
        retries = 0;
        if (step.kind === 'done') step.verdicts.forEach((v, i) => this.settle(part[i]!, toResult(v, part[i]!.insertId, part[i]!.attempts)));
        else await this.split(part, step.code);
        continue;
      }
      if (signal.aborted) return this.failAll(rest, this.cutShort(outage, last));
      last = { status: step.status, code: step.code, error: step.error };
      const now = this.s.clock.now();
      // No answer, or a server error: the server is out of reach. Any other answer (a 429 included) is a live server's.
      if (step.status === undefined || step.status >= 500) this.troubleSince ??= now;
      else this.troubleSince = null;
      if (++retries > this.s.maxRetries) return this.failAll(rest, last);
      const waitMs = backoffMs(this.s, retries, step.retryAfterMs);
      this.s.onRetry?.({ attempt: retries, waitMs, items: part.length, ...last });
      await this.timers.sleep(Math.min(waitMs, this.outageLeft(now)), signal);
      if (this.outageLeft(this.s.clock.now()) <= 0) this.giveUp(outage, last);
    }
  }

  /** Waits until the pacer allows a request of at most `want` items, and books it; null when `signal` ends the wait. */
  private async paced(want: number, signal: AbortSignal): Promise<{ items: number; ticket: number } | null> {
    for (;;) {
      if (signal.aborted) return null;
      const grant = this.pacer.reserve(want, this.s.clock.now());
      if ('items' in grant) return grant;
      // Every answer ends the wait: it may state more room than the one the wait was set by.
      const ended = new AbortController();
      const end = (): void => ended.abort();
      this.wakers.add(end);
      signal.addEventListener('abort', end, { once: true });
      await this.timers.sleep(grant.waitMs, ended.signal);
      this.wakers.delete(end);
      signal.removeEventListener('abort', end);
    }
  }

  /** Milliseconds until the server has been out of reach for unreachableTimeoutMs; Infinity while it answers. */
  private outageLeft(now: number): number {
    return this.troubleSince === null ? Infinity : this.troubleSince + this.s.unreachableTimeoutMs - now;
  }

  /**
   * The server has been out of reach for unreachableTimeoutMs: every item
   * held fails now (in flight: as soon as its attempt ends). Items queued
   * later are sent afresh.
   */
  private giveUp(outage: Outage, last: LastTry): void {
    if (outage !== this.outage) return;
    outage.last = last;
    this.outage = { stop: new AbortController(), last: {} };
    this.troubleSince = null;
    outage.stop.abort();
    for (const p of this.queue.splice(0)) this.settle(p, toResult({ outcome: 'failed', ...this.cutShort(outage, last) }, p.insertId, p.attempts));
  }

  /** The failure of a batch whose sending was cut short: by close(), or by an outage past its limit. */
  private cutShort(outage: Outage, last: LastTry): LastTry {
    if (!outage.stop.signal.aborted) return closedWhileRetrying(last);
    const seen = last.status === undefined && last.error === undefined ? outage.last : last;
    const error = `unavailable for ${seconds(this.s.unreachableTimeoutMs)}`;
    return { ...seen, error: seen.error === undefined ? error : `${error}, last error ${seen.error}` };
  }

  /** A batch too large for one request: each half on its own, down to single items. */
  private async split(batch: Pending[], code: string | undefined): Promise<void> {
    if (batch.length === 1) {
      const p = batch[0]!;
      const message = 'This item alone is over the 1 MiB request limit; make its properties smaller.';
      return this.settle(p, toResult({ outcome: 'refused', errors: [{ code: code ?? 'payload_too_large', field: 'item', message }] }, p.insertId, p.attempts));
    }
    const half = Math.ceil(batch.length / 2);
    await this.deliver(batch.slice(0, half));
    await this.deliver(batch.slice(half));
  }

  private failAll(batch: Pending[], last: LastTry): void {
    const verdict: Verdict = { outcome: 'failed', ...last };
    for (const p of batch) this.settle(p, toResult(verdict, p.insertId, p.attempts));
  }

  private settle(p: Pending, result: ItemResult): void {
    if (!this.unsettled.delete(p)) return;
    this.unsettledBytes -= p.bytes;
    if (this.drains.length > 0 && this.unsettled.size < this.s.maxQueue) for (const d of this.drains.splice(0)) d();
    try {
      this.s.onResult?.(result);
    } catch {
      // A throwing callback must not cost the other items their outcome.
    }
    const w = p.waiter;
    if (w === null) {
      addBounded(this.unclaimed, result, this.s.maxQueue);
      return;
    }
    addToReport(w.report, result);
    if (--w.remaining === 0) w.done();
  }
}

/**
 * Outcomes nobody flushes for yet: the counts stay exact, the lists keep at
 * most `cap` entries each, so a process that never calls flush() does not grow.
 */
function addBounded(r: Report, result: ItemResult, cap: number): void {
  const lists = { duplicate: r.duplicateItems, dropped: r.droppedItems, refused: r.refusedItems, failed: r.failedItems, accepted: null };
  const list = lists[result.outcome];
  if (list !== null && list.length >= cap) {
    list.shift();
  }
  addToReport(r, result);
}

/** The bytes of the request body of these items, before compression. */
function requestBytes(items: Pending[]): number {
  let bytes = '{"items":[]}'.length + Math.max(0, items.length - 1);
  for (const p of items) bytes += p.bytes;
  return bytes;
}

/** Milliseconds as seconds for a message: "60 s". */
function seconds(ms: number): string {
  return `${Math.round(ms / 1000)} s`;
}

/** The failure of a batch cut short by close(), keeping what its last attempt met. */
function closedWhileRetrying(last: LastTry): LastTry {
  // No parentheses of its own: callers quote the error inside theirs.
  return { ...last, error: last.error === undefined ? 'closed while retrying' : `closed while retrying, last error ${last.error}` };
}

function wireTime(t: Date | string | number | undefined): string | number {
  if (t === undefined) return new Date().toISOString();
  return t instanceof Date ? t.toISOString() : t;
}

function dropUndefined(item: WireItem): WireItem {
  const out: WireItem = {};
  for (const [k, v] of Object.entries(item)) if (v !== undefined) out[k] = v;
  return out;
}
