import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const SQLITE_MODULE = createRequire(import.meta.url).resolve('better-sqlite3');

/** How often the WAL is copied back into the database file. */
const CHECKPOINT_EVERY_MS = 250;

// A plain script, run in a thread of its own with a connection of its own:
// copying WAL pages back into the database file (and fsyncing it) then never
// happens inside a COMMIT on the request thread. PASSIVE never waits for or
// blocks a writer; durability is unchanged, since a commit is durable once
// its WAL frames are synced.
const SCRIPT = `
const { workerData, parentPort } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.file);
db.pragma('busy_timeout = 0');
const checkpoint = () => { try { db.pragma('wal_checkpoint(PASSIVE)'); } catch {} };
const timer = setInterval(checkpoint, workerData.everyMs);
parentPort.on('message', () => {
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

  constructor(file: string) {
    this.worker = new Worker(SCRIPT, { eval: true, workerData: { module: SQLITE_MODULE, file, everyMs: CHECKPOINT_EVERY_MS } });
    this.worker.unref();
    this.stopped = new Promise((resolve) => {
      this.worker.once('message', () => resolve());
      this.worker.once('exit', () => resolve());
      this.worker.once('error', () => resolve());
    });
  }

  /** Runs a last checkpoint and ends the thread. */
  async stop(): Promise<void> {
    this.worker.postMessage('stop');
    await this.stopped;
    await this.worker.terminate();
  }
}
