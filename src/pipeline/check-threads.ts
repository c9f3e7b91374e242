import { Worker } from 'node:worker_threads';
import { type Admit, type BatchContext, type CheckedBatch, checkBatchBody } from './checked-batch.js';
import { type TransferBatch, unpackBatch } from './item-transfer.js';
import type { Refusal } from './refusal.js';

/**
 * Bodies from this size up are checked on a thread. A 500-item batch is
 * about 100 KB; a one-item request, well under 1 KB, would pay more for the
 * trip (copying, two messages, waking the thread) than its checks cost.
 */
export const OFF_THREAD_MIN_BYTES = 32 * 1024;

/**
 * A thread's heap. It holds one body at a time (a 1 MiB body parses to about
 * 10 MiB), so the old generation's cap bounds a fault rather than sets a size.
 * With a young generation of 8 MiB the heap stays at about 17 MiB under
 * 500-item batches; V8's default young generation is 48 MiB.
 */
const THREAD_HEAP = { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 64 };

/** The thread's file (check-thread.ts); tests run this one from TypeScript and load the compiled thread from dist/. */
const THREAD_URL = import.meta.url.endsWith('.ts')
  ? new URL('../../dist/pipeline/check-thread.js', import.meta.url)
  : new URL('./check-thread.js', import.meta.url);

/** To a thread: a body to check. */
export interface CheckRequest {
  id: number;
  bytes: Uint8Array;
  ctx: BatchContext;
}

/** From a thread: the batch checked, a refusal of the body, or a failure of the thread's own. */
export type CheckReply = { id: number } & ({ batch: TransferBatch } | { refusal: Refusal } | { failed: true });

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
 */
export class CheckThreads {
  private readonly slots: (Thread | null)[];
  /** When each slot's thread last failed to start (epoch ms); 0 if never. */
  private readonly startFailedAt: number[];
  private nextId = 0;
  private closed = false;
  private readonly minBytes: number;
  private readonly heap: NonNullable<CheckThreadOptions['heap']>;
  private readonly onError: (err: Error) => void;
  private readonly newWorker: NonNullable<CheckThreadOptions['newWorker']>;
  private readonly clock: () => number;
  readonly stats: CheckThreadStats = { offThread: 0, retried: 0 };

  constructor(threads: number, opts: CheckThreadOptions = {}) {
    this.slots = Array.from({ length: threads }, () => null);
    this.startFailedAt = this.slots.map(() => 0);
    this.minBytes = opts.minBytes ?? OFF_THREAD_MIN_BYTES;
    this.heap = opts.heap ?? THREAD_HEAP;
    this.onError = opts.onError ?? (() => undefined);
    this.newWorker = opts.newWorker ?? ((resourceLimits) => new Worker(THREAD_URL, { resourceLimits }));
    this.clock = opts.clock ?? Date.now;
  }

  /** The body checked, on a thread if it is large and there are threads, else here; `admit` runs here in between. */
  async check(bytes: Uint8Array, ctx: BatchContext, admit: Admit): Promise<CheckedBatch | Refusal> {
    if (this.closed || this.slots.length === 0 || bytes.length < this.minBytes) return checkBatchBody(bytes, ctx, admit);
    const thread = this.leastBusy();
    if (thread === null) return this.retryHere(bytes, ctx, admit);
    const id = this.nextId++;
    // A copy in an ArrayBuffer of its own moves to the thread without a second copy; the caller keeps its bytes.
    const copy = new Uint8Array(bytes);
    const reply = await ask(thread, { id, bytes: copy, ctx }, [copy.buffer]);
    if (reply === null || 'failed' in reply) return this.retryHere(bytes, ctx, admit);
    this.stats.offThread++;
    if ('refusal' in reply) return reply.refusal;
    // Unpacked only once admitted: a body over a limit costs the main thread nothing more.
    return (await admit(reply.batch.count)) ?? unpackBatch(reply.batch);
  }

  /** Stops the threads; bodies still on one, and any after, are checked here. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((t) => t?.worker.terminate()));
  }

  private retryHere(bytes: Uint8Array, ctx: BatchContext, admit: Admit): Promise<CheckedBatch | Refusal> {
    this.stats.retried++;
    return checkBatchBody(bytes, ctx, admit);
  }

  /** The thread with the fewest bodies waiting, starting those not running; null if none runs. */
  private leastBusy(): Thread | null {
    let best: Thread | null = null;
    for (let i = 0; i < this.slots.length; i++) {
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
    return thread;
  }
}

/** Sends `m` to the thread and waits for its reply; null if the thread stops first. */
function ask(thread: Thread, m: CheckRequest, transfer: ArrayBuffer[]): Promise<CheckReply | null> {
  if (thread.stopped) return Promise.resolve(null);
  return new Promise((resolve) => {
    thread.waiting.set(m.id, resolve);
    thread.worker.postMessage(m, transfer);
  });
}
