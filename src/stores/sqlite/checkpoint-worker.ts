/**
 * The checkpoint thread (see checkpointer.ts), with a connection of its own:
 * copying WAL pages back into the database file (and fsyncing it) then never
 * happens inside a COMMIT on the request thread. PASSIVE never waits for or
 * blocks a writer; durability is unchanged, since a commit is durable once
 * its WAL frames are synced.
 *
 * PASSIVE alone cannot keep the WAL short under steady writes: SQLite starts
 * the WAL over only when a write begins after every frame has been copied
 * back, and with commits arriving all the time a new frame always lands
 * first, so the file grew without end (3 GB in 80 s of big batches). So when
 * the WAL gets long the thread says so, the server holds its writes for one
 * catch-up pass, and its next write starts the WAL from the beginning.
 *
 * Messages in: 'pass', 'catch-up', 'stop'. Out: 'passed', 'caught-up',
 * 'stopped', 'long' when the WAL is long, and 'looked' after a pass the
 * thread started on its own (nothing acts on it: it lets a test wait for the
 * thread's own clock instead of guessing at it).
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

/** What the checkpointer hands the thread. */
export interface CheckpointWorkerData {
  file: string;
  everyMs: number;
  longFrames: number;
  /** Passes at most before asking for a hold. */
  maxPrePasses: number;
  /** A pass that copies fewer frames than this ends the passes before a hold. */
  smallPassFrames: number;
  /** Intervals without a pass after which the thread starts one on its own. */
  fallbackIntervals: number;
}

interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

// Only when run as a thread: the checkpointer imports this file for its types alone.
if (parentPort !== null) run(parentPort, workerData as CheckpointWorkerData);

function run(port: NonNullable<typeof parentPort>, data: CheckpointWorkerData): void {
  const db = new Database(data.file);
  db.pragma('busy_timeout = 0');
  const checkpoint = (): CheckpointResult | null => {
    try {
      return (db.pragma('wal_checkpoint(PASSIVE)') as CheckpointResult[])[0] ?? null;
    } catch {
      return null;
    }
  };
  let lastLog = -1;
  let lastPass = 0;
  const pass = (): void => {
    lastPass = Date.now();
    let r = checkpoint();
    // Only while writes come in: an idle WAL, however long, starts over at the next write.
    if (r !== null && r.log >= data.longFrames && r.log !== lastLog) {
      // Before asking for a hold, copy again what arrived during the last pass,
      // until a pass copies little: the hold then only covers that remainder.
      for (let i = 0; i < data.maxPrePasses; i++) {
        const next = checkpoint();
        if (next === null) break;
        const copied = next.log < r.log ? next.checkpointed : next.checkpointed - r.checkpointed;
        r = next;
        if (copied < data.smallPassFrames) break;
      }
      // The passes may have let the WAL start over already.
      if (r.log >= data.longFrames) port.postMessage('long');
    }
    lastLog = r !== null ? r.log : lastLog;
  };
  const timer = setInterval(() => {
    if (Date.now() - lastPass < data.everyMs * data.fallbackIntervals) return;
    pass();
    port.postMessage('looked');
  }, data.everyMs);
  port.on('message', (m) => {
    if (m === 'pass') {
      pass();
      port.postMessage('passed');
      return;
    }
    if (m === 'catch-up') {
      checkpoint();
      port.postMessage('caught-up');
      return;
    }
    clearInterval(timer);
    checkpoint();
    db.close();
    port.postMessage('stopped');
  });
}
