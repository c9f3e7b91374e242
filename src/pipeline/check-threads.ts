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

interface Thread {
  worker: Worker;
  /** Replies awaited, by body; each gets null if the thread stops first. */
  waiting: Map<number, (r: CheckReply | null) => void>;
  stopped: boolean;
}

export interface CheckThreadStats {
  /** Bodies a thread checked (or refused as a body). */
  offThread: number;
  /** Bodies checked again on the main thread because their thread failed or stopped. */
  retried: number;
}

/**
 * Steps 13 to 17 of large bodies (parse, shape, item checks, enrichment) on
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
  private nextId = 0;
  private closed = false;
  readonly stats: CheckThreadStats = { offThread: 0, retried: 0 };

  constructor(
    threads: number,
    private readonly minBytes = OFF_THREAD_MIN_BYTES,
    private readonly heap: { maxYoungGenerationSizeMb: number; maxOldGenerationSizeMb: number } = THREAD_HEAP,
    /** Told when a thread fails (its heap cap, a bug), for the log; its bodies are checked here all the same. */
    private readonly onError: (err: Error) => void = () => undefined,
  ) {
    this.slots = Array.from({ length: threads }, () => null);
  }

  /** The body checked, on a thread if it is large and there are threads, else here; `admit` runs here in between. */
  async check(bytes: Uint8Array, ctx: BatchContext, admit: Admit): Promise<CheckedBatch | Refusal> {
    if (this.closed || this.slots.length === 0 || bytes.length < this.minBytes) return checkBatchBody(bytes, ctx, admit);
    const thread = this.leastBusy();
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

  private leastBusy(): Thread {
    let best: Thread | null = null;
    for (let i = 0; i < this.slots.length; i++) {
      const t = (this.slots[i] ??= this.start(i));
      if (best === null || t.waiting.size < best.waiting.size) best = t;
    }
    return best!;
  }

  private start(slot: number): Thread {
    const worker = new Worker(THREAD_URL, { resourceLimits: this.heap });
    // A thread never keeps the process alive: the server's sockets and timers decide that.
    worker.unref();
    const thread: Thread = { worker, waiting: new Map(), stopped: false };
    worker.on('message', (m: CheckReply) => {
      const settle = thread.waiting.get(m.id);
      thread.waiting.delete(m.id);
      settle?.(m);
    });
    // 'error' (an uncaught failure, the heap cap) is followed by 'exit'.
    worker.on('error', (err) => this.onError(err));
    worker.on('exit', () => {
      thread.stopped = true;
      if (this.slots[slot] === thread) this.slots[slot] = null;
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
