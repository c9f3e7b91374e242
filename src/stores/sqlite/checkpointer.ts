import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const SQLITE_MODULE = createRequire(import.meta.url).resolve('better-sqlite3');

/**
 * The shortest time between two checkpoint passes. Each pass ends with an
 * fsync of the database file, and a COMMIT whose own fsync lands during it
 * waits for the disk: timed in the server, such commits took 23 to 34 ms
 * instead of 3 to 5, which is most of a 500-item batch's p99. So a pass is
 * started right after a COMMIT returns (see committed()), when the next one
 * is furthest away, rather than on a clock that lands anywhere; and passes
 * come often enough that each has little to copy (bench/README.md).
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

// A plain script, run in a thread of its own with a connection of its own:
// copying WAL pages back into the database file (and fsyncing it) then never
// happens inside a COMMIT on the request thread. PASSIVE never waits for or
// blocks a writer; durability is unchanged, since a commit is durable once
// its WAL frames are synced.
//
// PASSIVE alone cannot keep the WAL short under steady writes: SQLite starts
// the WAL over only when a write begins after every frame has been copied
// back, and with commits arriving all the time a new frame always lands
// first, so the file grew without end (3 GB in 80 s of big batches). So when
// the WAL gets long the thread says so, the server holds its writes for one
// catch-up pass, and its next write starts the WAL from the beginning.
const SCRIPT = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 0');
const checkpoint = () => { try { return db.pragma('wal_checkpoint(PASSIVE)')[0]; } catch { return null; } };
let lastLog = -1;
let lastPass = 0;
const pass = () => {
  lastPass = Date.now();
  let r = checkpoint();
  // Only while writes come in: an idle WAL, however long, starts over at the next write.
  if (r && r.log >= workerData.longFrames && r.log !== lastLog) {
    // Before asking for a hold, copy again what arrived during the last pass,
    // until a pass copies little: the hold then only covers that remainder.
    for (let i = 0; i < workerData.maxPrePasses; i++) {
      const next = checkpoint();
      if (!next) break;
      const copied = next.log < r.log ? next.checkpointed : next.checkpointed - r.checkpointed;
      r = next;
      if (copied < workerData.smallPassFrames) break;
    }
    // The passes may have let the WAL start over already.
    if (r.log >= workerData.longFrames) parentPort.postMessage('long');
  }
  lastLog = r ? r.log : lastLog;
};
const timer = setInterval(() => {
  if (Date.now() - lastPass >= workerData.everyMs * workerData.fallbackIntervals) pass();
}, workerData.everyMs);
parentPort.on('message', (m) => {
  if (m === 'pass') {
    pass();
    parentPort.postMessage('passed');
    return;
  }
  if (m === 'catch-up') {
    checkpoint();
    parentPort.postMessage('caught-up');
    return;
  }
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.postMessage('stopped');
});
`;

/** Keeps the WAL of one database file short from a background thread. */
export class Checkpointer {
  private readonly worker: Worker;
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
  ) {
    this.worker = new Worker(SCRIPT, {
      eval: true,
      workerData: { module: SQLITE_MODULE, file, everyMs, longFrames, maxPrePasses: 8, smallPassFrames: 1024, fallbackIntervals: FALLBACK_INTERVALS },
    });
    this.worker.unref();
    this.worker.on('message', (m) => {
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
