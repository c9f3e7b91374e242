import { Worker } from 'node:worker_threads';
import type { CheckpointWorkerData } from './checkpoint-worker.js';
import { threadEntry } from '../../thread-entry.js';

/**
 * The shortest time between two checkpoint passes. Each pass ends with an
 * fsync of the database file, and a COMMIT whose own fsync lands during it
 * waits for the disk: timed in the server, such commits took 23 to 34 ms
 * instead of 3 to 5, which is most of a 500-item batch's p99. So a pass is
 * started right after a COMMIT returns (see committed()), when the next one
 * is furthest away, rather than on a clock that lands anywhere; and passes
 * come often enough that each has little to copy (docs/design.md, "What the
 * embedded store keeps, and why").
 */
const CHECKPOINT_EVERY_MS = 250;

/** WAL frames (pages) past which the writer is asked to pause so the WAL can start over. */
export const LONG_WAL_FRAMES = 16_384;

/** The longest a catch-up may hold writes, should the thread not answer. */
const CATCH_UP_TIMEOUT_MS = 2000;

/**
 * Passes the thread starts on its own, for writes that never call
 * committed() (admin commands, another process on the same file), come
 * only after this many intervals without one.
 */
const FALLBACK_INTERVALS = 4;

/** The worker's file (checkpoint-worker.ts), compiled. */
const WORKER_URL = threadEntry('stores/sqlite/checkpoint-worker.js');

/**
 * The slice of a worker thread the checkpointer uses. A seam for tests: they
 * wrap the real thread to watch or drop its messages (a stuck thread is one
 * that drops 'catch-up'), or give one that never starts, where reaching into
 * the class would tie them to its fields. What `on`, `off` and `once` return
 * is not used, so an event emitter with the other members is one too.
 */
export interface CheckpointThread {
  postMessage(message: unknown): void;
  on(event: string, listener: (value: unknown) => void): unknown;
  off(event: string, listener: (value: unknown) => void): unknown;
  once(event: string, listener: (value: unknown) => void): unknown;
  emit(event: string, ...args: unknown[]): boolean;
  unref(): void;
  terminate(): Promise<number>;
}

/** Starts the checkpoint thread on its worker file. */
export function startCheckpointThread(workerData: CheckpointWorkerData): CheckpointThread {
  return new Worker(WORKER_URL, { workerData });
}

/** Keeps the WAL of one database file short from a background thread. */
export class Checkpointer {
  private readonly worker: CheckpointThread;
  private readonly stopped: Promise<void>;
  private waiting: (() => void) | null = null;
  private onLong: () => void = () => undefined;
  private stopping = false;
  /** Whether the thread is running a pass that committed() asked for. */
  private passing = false;
  private lastPassAt = -Infinity;
  private passes = 0;

  constructor(
    file: string,
    longFrames = LONG_WAL_FRAMES,
    private readonly everyMs = CHECKPOINT_EVERY_MS,
    private readonly catchUpTimeoutMs = CATCH_UP_TIMEOUT_MS,
    startThread: (data: CheckpointWorkerData) => CheckpointThread = startCheckpointThread,
  ) {
    const workerData: CheckpointWorkerData = { file, everyMs, longFrames, maxPrePasses: 8, smallPassFrames: 1024, fallbackIntervals: FALLBACK_INTERVALS };
    this.worker = startThread(workerData);
    this.worker.unref();
    this.worker.on('message', (m: unknown) => {
      if (m === 'long' && !this.stopping) this.onLong();
      else if (m === 'caught-up') this.settle();
      else if (m === 'passed') {
        this.passing = false;
        this.passes++;
      }
    });
    this.stopped = new Promise((resolve) => {
      this.worker.once('exit', () => resolve());
      this.worker.once('error', () => resolve());
    });
    // A thread that is gone must never leave writes held.
    void this.stopped.then(() => this.settle());
  }

  /** Called (repeatedly) while the WAL is longer than it should be. */
  whenLong(fn: () => void): void {
    this.onLong = fn;
  }

  /**
   * Called when a COMMIT has just returned: starts a pass now if none ran in
   * the last interval and none is running. Right after a COMMIT the next one
   * is a whole ingest pass away, so the pass's fsync is likely done before it.
   */
  committed(): void {
    if (this.passing || this.stopping) return;
    const now = performance.now();
    if (now - this.lastPassAt < this.everyMs) return;
    this.lastPassAt = now;
    this.passing = true;
    this.worker.postMessage('pass');
  }

  /** Passes committed() asked for that have ended (tests read it). */
  get passesDone(): number {
    return this.passes;
  }

  /**
   * One checkpoint pass, to be run while the writer holds its writes: it
   * copies every frame back, so the next write starts the WAL over.
   */
  catchUp(): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.settle(), this.catchUpTimeoutMs);
      timer.unref();
      this.waiting = () => {
        clearTimeout(timer);
        resolve();
      };
      this.worker.postMessage('catch-up');
    });
  }

  private settle(): void {
    const w = this.waiting;
    this.waiting = null;
    w?.();
  }

  /** Runs a last checkpoint and ends the thread. */
  async stop(): Promise<void> {
    this.stopping = true;
    this.settle();
    let done: (m: unknown) => void = () => undefined;
    await new Promise<void>((resolve) => {
      done = (m) => {
        if (m === 'stopped') resolve();
      };
      this.worker.on('message', done);
      this.worker.postMessage('stop');
      void this.stopped.then(() => resolve());
    });
    this.worker.off('message', done);
    await this.worker.terminate();
  }
}
