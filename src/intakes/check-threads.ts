import { Worker } from 'node:worker_threads';
import type { BearerResult } from '../domain/keys.js';
import { type Admit, type BatchContext, type CheckedBatch, checkBatchBody } from '../pipeline/checked-batch.js';
import { KEEP_COMPILED, type PlanContext, compiledHere, compiledKeysSettled, compiledPlanFor } from '../domain/plans/check.js';
import { type CheckedMessages, type KeyFound, type WireShape, checkForeignBody } from '../pipeline/foreign-body.js';
import { type ItemTuple, type TransferBatch, unpackBatch, unpackItems } from '../pipeline/item-transfer.js';
import { KeylessGate } from '../pipeline/keyless-gate.js';
import type { Refusal } from '../domain/intake/refusal.js';
import { wireOf } from './registry.js';
import { threadEntry } from '../thread-entry.js';

/**
 * Bodies from this size up are checked on a thread. A 500-item batch is
 * about 100 KB; a one-item request, well under 1 KB, would pay more for the
 * trip (copying, two messages, waking the thread) than its checks cost.
 */
export const OFF_THREAD_MIN_BYTES = 32 * 1024;

/**
 * A thread's heap. It holds one body at a time (a 1 MiB body parses to about
 * 10 MiB), so the old generation's cap bounds a fault rather than sets a size.
 * The young generation is sized for a 500-item body held to a tracking plan:
 * at 8, 16 or 24 MiB the plan's checks made what a body parses to outlive
 * the scavenges within it often enough that V8 began to allocate such objects
 * in the old generation from the start (allocation-site pretenuring), and a
 * run either stayed at about 4.3 µs of process CPU per item or settled at 6 to
 * 6.6 (bodies posted to a thread as the server does, the bench's 50-event
 * plan); at 32 MiB every run stayed low. Without a plan the size changes
 * little (3.7 to 4.1 µs). It costs about 20 MiB of RSS at the bench's big
 * batches; V8's default is 48 MiB.
 */
const THREAD_HEAP = { maxYoungGenerationSizeMb: 32, maxOldGenerationSizeMb: 64 };

/** The thread's file (check-thread.ts), compiled. */
const THREAD_URL = threadEntry('intakes/check-thread.js');

/**
 * Bodies whose key is still unknown waiting for a thread, all clients
 * together, and of one client address: past either, a body is answered 503
 * at once. A body waits for at most this many before it, each at most about
 * 10 ms of a thread's time (1 MiB of JSON).
 */
export const KEYLESS_WAITING = 32;
export const KEYLESS_WAITING_PER_ADDRESS = 4;

/**
 * To a thread: a batch body to check; a body in another API's shape to check
 * (its key known); such a body whose key is not in a header, to decompress
 * and parse only to find its key; or a plan version to compile ahead of the
 * bodies that will be held to it.
 */
export type CheckRequest = { id: number } & (
  | { kind: 'batch'; bytes: Uint8Array; ctx: BatchContext }
  | { kind: 'messages'; bytes: Uint8Array; shape: WireShape; ctx: BatchContext }
  | { kind: 'key'; bytes: Uint8Array; shape: WireShape; gzip: boolean }
  | { kind: 'prepare'; plan: PlanContext }
  | { kind: 'held' }
);

/** Checked messages as they cross. */
export interface TransferMessages {
  batch: TransferBatch;
  updates: ItemTuple[];
}

/** From a thread: what it made of the body, a refusal of the body, or a failure of the thread's own. */
export type CheckReply = { id: number } & (
  | { batch: TransferBatch }
  | { messages: TransferMessages }
  | { key: BearerResult; json: Uint8Array; intake?: string }
  | { refusal: Refusal }
  /** To `prepare` and `held`: the keys of the versions the thread holds compiled (for `held`, once those under way are). */
  | { prepared: string[] }
  | { failed: true }
);

/** How a CheckThreads is set up; every field has a default. */
export interface CheckThreadOptions {
  /** Bodies from this size up go to a thread. */
  minBytes?: number;
  heap?: { maxYoungGenerationSizeMb: number; maxOldGenerationSizeMb: number };
  /** Told when a thread fails or cannot start (its heap cap, a bug, the system's thread limit), for the log. */
  onError?: (err: Error) => void;
  /** Starts a thread; tests pass one that fails. */
  newWorker?: (heap: NonNullable<CheckThreadOptions['heap']>) => Worker;
  /** Epoch ms, for when a thread that could not start is tried again; tests pass their own. */
  clock?: () => number;
}

/** After a thread could not start, how long its slot's bodies are checked here before it is tried again. */
const RESTART_AFTER_MS = 1000;

interface Thread {
  worker: Worker;
  /** Replies awaited, by body; each gets null if the thread stops first. */
  waiting: Map<number, (r: CheckReply | null) => void>;
  stopped: boolean;
  /** Whether it has answered any body: one that stops before is taken as one that could not start. */
  answered: boolean;
}

export interface CheckThreadStats {
  /** Bodies a thread checked (or refused as a body). */
  offThread: number;
  /** Bodies checked on the main thread because their thread failed, stopped or could not start. */
  retried: number;
}

/** What became of bodies whose key is inside them, on their way to a thread to find it. */
export interface KeylessStats {
  /** Bodies a thread read for their key (or refused: broken gzip, too large once decompressed). */
  read: number;
  /** Bodies answered 503: no place to wait for a thread, or no thread. */
  refused: number;
}

const KEYLESS_BUSY: Refusal = {
  code: 'collection_unavailable',
  message:
    'This server is already checking as many request bodies with the key in the body as it takes at once; nothing was stored. Resend after Retry-After seconds, or send the key in the Authorization header (HTTP Basic or Bearer), which is never held up by them.',
};

/**
 * The checks of large bodies from parsing on (parse, shape, item checks, enrichment) on
 * threads beside the main one, which then only counts limits, writes and
 * answers.
 *
 * Why: with 500-item batches the main thread was the limit, and these steps
 * were about a quarter of its time (docs/design.md, "Checks on a thread").
 * The answer is the one checkBatchBody gives on the main thread, limits
 * first; but a thread checks a body's items before the main thread counts
 * them against the limits, rather than hold the parsed body across that wait
 * (the design page says why). Each body goes to the thread with the fewest
 * waiting. If a thread fails or stops (its heap limit, a bug), its bodies are
 * checked on the main thread, and the next body starts a new thread.
 *
 * A body whose key is inside it (Segment's writeKey, PostHog's api_key) is
 * never decompressed or parsed on the main thread, whatever its size: anyone
 * can send one. A thread finds its key (findKey), within a budget of its own
 * (KeylessGate: half the threads at most, one at least, and a bounded wait),
 * and once the key is checked, checks it (checkMessages with `keyInBody`).
 * With no threads set, one is started for such bodies alone.
 */
export class CheckThreads {
  private readonly slots: (Thread | null)[];
  /** When each slot's thread last failed to start (epoch ms); 0 if never. */
  private readonly startFailedAt: number[];
  private nextId = 0;
  private closed = false;
  /** Slots bodies with their key in a header may use: the threads set. With none set, there is one slot still, for bodies with their key inside. */
  private readonly keyed: number;
  private readonly keyless: KeylessGate;
  private readonly minBytes: number;
  private readonly heap: NonNullable<CheckThreadOptions['heap']>;
  private readonly onError: (err: Error) => void;
  private readonly newWorker: NonNullable<CheckThreadOptions['newWorker']>;
  private readonly clock: () => number;
  /** The plan versions every thread is to hold compiled (prepare), the most recently asked last: a thread that starts compiles them first. */
  private readonly prepared = new Map<string, PlanContext>();
  readonly stats: CheckThreadStats = { offThread: 0, retried: 0 };
  readonly keylessStats: KeylessStats = { read: 0, refused: 0 };

  constructor(threads: number, opts: CheckThreadOptions = {}) {
    this.keyed = threads;
    this.slots = Array.from({ length: Math.max(threads, 1) }, () => null);
    this.startFailedAt = this.slots.map(() => 0);
    this.keyless = new KeylessGate(Math.max(1, Math.floor(threads / 2)), KEYLESS_WAITING, KEYLESS_WAITING_PER_ADDRESS);
    this.minBytes = opts.minBytes ?? OFF_THREAD_MIN_BYTES;
    this.heap = opts.heap ?? THREAD_HEAP;
    this.onError = opts.onError ?? (() => undefined);
    this.newWorker = opts.newWorker ?? ((resourceLimits) => new Worker(THREAD_URL, { resourceLimits }));
    this.clock = opts.clock ?? Date.now;
  }

  /** The body checked, on a thread if it is large and there are threads, else here; `admit` runs here in between. */
  async check(bytes: Uint8Array, ctx: BatchContext, admit: Admit): Promise<CheckedBatch | Refusal> {
    const here = () => checkBatchBody(bytes, ctx, admit);
    if (!this.offThread(bytes, false, ctx)) return here();
    const reply = await this.ask(this.keyed, { id: this.nextId++, kind: 'batch', bytes: ownCopy(bytes), ctx });
    if (reply === null || !('batch' in reply || 'refusal' in reply)) return this.retryHere(here);
    this.stats.offThread++;
    if ('refusal' in reply) return reply.refusal;
    // Unpacked only once admitted: a body over a limit costs the main thread nothing more.
    return (await admit(reply.batch.count)) ?? unpackBatch(reply.batch);
  }

  /**
   * A body in another API's shape checked, its key known, as check() checks a
   * batch: one item a message. A body whose key was inside it (`keyInBody`)
   * goes to a thread whatever its size; here only if its thread fails, its
   * key being good.
   */
  async checkMessages(bytes: Uint8Array, shape: WireShape, ctx: BatchContext, admit: Admit, keyInBody: boolean): Promise<CheckedMessages | Refusal> {
    const here = () => checkForeignBody(bytes, wireOf(shape.intake), shape, ctx, admit);
    if (!this.offThread(bytes, keyInBody, ctx)) return here();
    const slots = keyInBody ? this.slots.length : this.keyed;
    const reply = await this.ask(slots, { id: this.nextId++, kind: 'messages', bytes: ownCopy(bytes), shape, ctx });
    if (reply === null || !('messages' in reply || 'refusal' in reply)) return this.retryHere(here);
    this.stats.offThread++;
    if ('refusal' in reply) return reply.refusal;
    const { batch, updates } = reply.messages;
    return (await admit(batch.count)) ?? { batch: unpackBatch(batch), updates: unpackItems(updates) };
  }

  /**
   * The key of a body whose key is not in a header, found on a thread (the
   * body decompressed there when `gzip`), with its JSON; 503 when the keyless
   * budget has no place for it, or no thread runs. Never here.
   */
  async findKey(bytes: Uint8Array, gzip: boolean, shape: WireShape, address: string): Promise<KeyFound | Refusal> {
    const turn = this.closed ? null : this.keyless.enter(address);
    if (turn === null) return this.keylessRefused();
    const leave = await turn;
    try {
      const reply = await this.ask(this.slots.length, { id: this.nextId++, kind: 'key', bytes: ownCopy(bytes), shape, gzip });
      if (reply === null || !('key' in reply || 'refusal' in reply)) return this.keylessRefused();
      this.keylessStats.read++;
      if ('refusal' in reply) return reply.refusal;
      return reply.intake === undefined ? { key: reply.key, json: reply.json } : { key: reply.key, json: reply.json, intake: reply.intake };
    } finally {
      leave();
    }
  }

  /**
   * Compiles a plan version ahead of the bodies held to it, wherever they may
   * be checked: here (a few rules a turn) and on every thread (a thread
   * started later, or again, compiles it before its first body). Resolves once
   * all have (a thread that fails or stops is passed over); rejects when the
   * version does not compile.
   */
  async prepare(plan: PlanContext): Promise<void> {
    this.prepared.delete(plan.key);
    this.prepared.set(plan.key, plan);
    if (this.prepared.size > KEEP_COMPILED) this.prepared.delete(this.prepared.keys().next().value!);
    // The threads bodies with their key in a header go to are started for it (one started now compiles every version prepared, first).
    if (!this.closed) this.leastBusy(this.keyed);
    const threads = this.closed ? [] : this.slots.filter((t): t is Thread => t !== null);
    await Promise.all([compiledPlanFor(plan), ...threads.map((t) => ask(t, { id: this.nextId++, kind: 'prepare', plan }, []))]);
  }

  /** The keys of the plan versions held compiled here, then on each thread running (null for one that stopped first), once the compiles under way have ended. */
  async held(): Promise<{ here: string[]; threads: (string[] | null)[] }> {
    const threads = this.slots.filter((t): t is Thread => t !== null);
    const replies = Promise.all(threads.map((t) => ask(t, { id: this.nextId++, kind: 'held' }, [])));
    const here = await compiledKeysSettled();
    return { here, threads: (await replies).map((r) => (r !== null && 'prepared' in r ? r.prepared : null)) };
  }

  /** Bodies whose key is unknown on a thread, and waiting for one (for tests and metrics). */
  get keylessInHand(): { running: number; waiting: number } {
    return this.keyless.counts;
  }

  /** Stops the threads; bodies still on one, and any after, are checked here (those whose key is unknown are refused). */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((t) => t?.worker.terminate()));
  }

  /** Whether a body goes to a thread: its key is inside it, or it is large, or its source's plan is not compiled here yet (compiledHere). */
  private offThread(bytes: Uint8Array, keyInBody: boolean, ctx: BatchContext): boolean {
    if (this.closed) return false;
    if (keyInBody) return true;
    return this.keyed > 0 && (bytes.length >= this.minBytes || (ctx.plan !== undefined && !compiledHere(ctx.plan)));
  }

  private retryHere<T>(here: () => Promise<T>): Promise<T> {
    this.stats.retried++;
    return here();
  }

  private keylessRefused(): Refusal {
    this.keylessStats.refused++;
    return KEYLESS_BUSY;
  }

  /** Sends the request to the least busy thread of the first `slots`; null if none runs or it stops first. */
  private ask(slots: number, m: CheckRequest): Promise<CheckReply | null> {
    const thread = this.closed ? null : this.leastBusy(slots);
    // A copy in an ArrayBuffer of its own moves to the thread without a second copy.
    return thread === null ? Promise.resolve(null) : ask(thread, m, 'bytes' in m ? [m.bytes.buffer as ArrayBuffer] : []);
  }

  /** The thread with the fewest bodies waiting among the first `count` slots, starting those not running; null if none runs. */
  private leastBusy(count: number): Thread | null {
    let best: Thread | null = null;
    for (let i = 0; i < count; i++) {
      const t = (this.slots[i] ??= this.start(i));
      if (t !== null && (best === null || t.waiting.size < best.waiting.size)) best = t;
    }
    return best;
  }

  /** A new thread in the slot, or null if it cannot start (tried again RESTART_AFTER_MS later, as after one that stopped before answering). */
  private start(slot: number): Thread | null {
    if (this.clock() - this.startFailedAt[slot]! < RESTART_AFTER_MS) return null;
    let worker: Worker;
    try {
      worker = this.newWorker(this.heap);
    } catch (e) {
      this.startFailedAt[slot] = this.clock();
      this.onError(e as Error);
      return null;
    }
    // A thread never keeps the process alive: the server's sockets and timers decide that.
    worker.unref();
    const thread: Thread = { worker, waiting: new Map(), stopped: false, answered: false };
    worker.on('message', (m: CheckReply) => {
      thread.answered = true;
      const settle = thread.waiting.get(m.id);
      thread.waiting.delete(m.id);
      settle?.(m);
    });
    // 'error' (an uncaught failure, the heap cap) is followed by 'exit'.
    worker.on('error', (err) => this.onError(err));
    worker.on('exit', () => {
      thread.stopped = true;
      if (this.slots[slot] === thread) this.slots[slot] = null;
      // A thread that fails as it loads would otherwise be started again for every body.
      if (!thread.answered && !this.closed) this.startFailedAt[slot] = this.clock();
      for (const settle of thread.waiting.values()) settle(null);
      thread.waiting.clear();
    });
    // Before any body: the thread's queue is in order, so a body held to one of these waits at most for the rest of its compile.
    for (const plan of this.prepared.values()) void ask(thread, { id: this.nextId++, kind: 'prepare', plan }, []);
    return thread;
  }
}

/** The bytes in an ArrayBuffer of their own, which can move to a thread: the caller keeps its bytes, whose buffer may hold others' too. */
function ownCopy(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes);
}

/** Sends `m` to the thread and waits for its reply; null if the thread stops first. */
function ask(thread: Thread, m: CheckRequest, transfer: ArrayBuffer[]): Promise<CheckReply | null> {
  if (thread.stopped) return Promise.resolve(null);
  return new Promise((resolve) => {
    thread.waiting.set(m.id, resolve);
    thread.worker.postMessage(m, transfer);
  });
}
