import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it, vi } from 'vitest';
import { tempDir } from '../../../test/helpers/fixture.js';
import type { IngestJob } from '../../domain/ingest/job.js';
import { RECEIVED_AT, collectorOn, ingestJob } from '../../../test/helpers/items.js';
import type { CheckpointWorkerData } from './checkpoint-worker.js';
import { type CheckpointThread, Checkpointer, startCheckpointThread } from './checkpointer.js';
import { openSqlite } from './open.js';
import { SqliteStore } from './sqlite-store.js';

const tmp = tempDir('inlet-checkpointer-');
afterEach(() => tmp.remove());

function job(n: number): IngestJob {
  return ingestJob(
    Array.from({ length: 100 }, (_, index) => ({
      distinctId: `u${index}`, insertId: `b${n}-${index}`, timestamp: RECEIVED_AT + ((n * 7919 + index * 104_729) % 3_600_000), properties: { pad: 'x'.repeat(200) },
    })),
  );
}

it('under writes that never pause, the WAL still starts over and stays short on disk', async () => {
  const collector = await collectorOn(SqliteStore.open(tmp.dir, { longFrames: 200, sizeLimitBytes: 512 * 1024, checkpointEveryMs: 100 }));
  const wal = join(tmp.dir, 'inlet.db-wal');
  let largest = 0;
  // 300 commits back to back, many times the WAL's limit of pages.
  let n = 0;
  while (n < 300) {
    await Promise.all(Array.from({ length: 4 }, () => collector.ingest(job(n++))));
    largest = Math.max(largest, statSync(wal).size);
  }
  const dbSize = statSync(join(tmp.dir, 'inlet.db')).size;
  await collector.close();
  expect(dbSize).toBeGreaterThan(4 * 1024 * 1024);
  // Left to PASSIVE checkpoints alone the WAL grew to about 9 times the database
  // here (284 MB for 32 MB); starting over keeps it under the database's size,
  // give or take what is written between two passes of the thread.
  expect(largest).toBeLessThan(3 * dbSize);
});

/**
 * Starts the real checkpoint thread and watches it through the injected seam:
 * the messages sent to it, and those it sends, so a test waits for the
 * thread's events rather than for time to pass. `deafToCatchUps` drops
 * catch-up requests, as a stuck thread would.
 */
function watchedThread(o: { deafToCatchUps?: boolean } = {}) {
  const posted: unknown[] = [];
  const heard = new Map<unknown, number>();
  const waiters: { message: unknown; count: number; resolve: () => void }[] = [];
  let thread: CheckpointThread | null = null;
  const start = (data: CheckpointWorkerData): CheckpointThread => {
    const t = startCheckpointThread(data);
    const post = t.postMessage.bind(t);
    t.postMessage = (m: unknown) => {
      posted.push(m);
      if (!(o.deafToCatchUps === true && m === 'catch-up')) post(m);
    };
    t.on('message', (m: unknown) => {
      heard.set(m, (heard.get(m) ?? 0) + 1);
      for (const w of waiters.filter((x) => x.message === m && x.count <= heard.get(m)!)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    });
    thread = t;
    return t;
  };
  /** Resolves once the thread has sent `message` `more` times from now. */
  const next = (message: string, more = 1) =>
    new Promise<void>((resolve) => {
      const count = (heard.get(message) ?? 0) + more;
      waiters.push({ message, count, resolve });
    });
  return { start, posted, next, thread: () => thread! };
}

/** A promise's state after the work already queued has run. */
async function settledNow(p: Promise<unknown>): Promise<boolean> {
  let settled = false;
  void p.then(() => (settled = true), () => (settled = true));
  await new Promise((r) => setImmediate(r));
  return settled;
}

it('an idle WAL, however long, asks for no hold; writes do; a stopped thread holds nothing', async () => {
  const db = openSqlite(tmp.dir);
  db.pragma('wal_autocheckpoint = 0');
  db.exec('CREATE TABLE filler (x TEXT)');
  const add = db.prepare('INSERT INTO filler (x) VALUES (?)');
  db.transaction(() => {
    for (let i = 0; i < 2000; i++) add.run('y'.repeat(1000));
  })();
  const watched = watchedThread();
  const checkpointer = new Checkpointer(db.name, 100, 50, undefined, watched.start);
  let asked = 0;
  checkpointer.whenLong(() => asked++);
  // Long but idle: one ask at most, for the writes made before the thread's first look.
  await watched.next('looked', 3);
  expect(asked).toBeLessThanOrEqual(1);
  const idle = asked;
  await watched.next('looked', 2);
  expect(asked).toBe(idle);
  await checkpointer.catchUp();

  // Writes that the thread has not copied yet (more frames than the WAL's
  // limit between two looks) make it ask, at its next look.
  for (let looks = 0; looks < 10 && asked === idle; looks++) {
    db.transaction(() => {
      for (let i = 0; i < 1000; i++) add.run('z'.repeat(1000));
    })();
    await watched.next('looked');
  }
  expect(asked).toBeGreaterThan(idle);

  await checkpointer.stop();
  // Stopped: a catch-up settles at once instead of waiting out its timeout.
  expect(await settledNow(checkpointer.catchUp())).toBe(true);
  db.close();
});

it('a commit starts a pass at once, at most one an interval, and the next write starts the WAL over', async () => {
  const db = openSqlite(tmp.dir);
  db.pragma('wal_autocheckpoint = 0');
  db.exec('CREATE TABLE filler (x TEXT)');
  const add = db.prepare('INSERT INTO filler (x) VALUES (?)');
  const fill = (n: number) =>
    db.transaction(() => {
      for (let i = 0; i < n; i++) add.run('y'.repeat(1000));
    })();
  const walFrames = () => (db.pragma('wal_checkpoint(PASSIVE)') as { log: number }[])[0]!.log;
  const watched = watchedThread();
  // An interval far longer than the test: its own clock never starts a pass here.
  const checkpointer = new Checkpointer(db.name, 1_000_000, 60_000, undefined, watched.start);
  const passed = watched.next('passed');
  fill(500);
  checkpointer.committed();
  // A second commit in the same interval asks for nothing more.
  checkpointer.committed();
  expect(watched.posted).toEqual(['pass']);
  await passed;
  expect(checkpointer.passesDone).toBe(1);
  // Every frame was copied back, so this write starts the WAL from its beginning.
  fill(1);
  expect(walFrames()).toBeLessThan(10);
  // The pass is over, but the interval is not: a commit now asks for nothing either.
  checkpointer.committed();
  expect(watched.posted).toEqual(['pass']);
  expect(checkpointer.passesDone).toBe(1);
  await checkpointer.stop();
  db.close();
});

it('a thread that never answers a catch-up holds writes no longer than the timeout', async () => {
  const db = openSqlite(tmp.dir);
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  try {
    const checkpointer = new Checkpointer(db.name, 1_000_000, 60_000, 150, watchedThread({ deafToCatchUps: true }).start);
    const caughtUp = checkpointer.catchUp();
    await vi.advanceTimersByTimeAsync(149);
    expect(await settledNow(caughtUp)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settledNow(caughtUp)).toBe(true);
    await checkpointer.stop();
  } finally {
    vi.useRealTimers();
    db.close();
  }
});

it('jobs that arrive during a hold are committed once it ends, and close() waits for them', async () => {
  const deaf = watchedThread({ deafToCatchUps: true });
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  try {
    const collector = await collectorOn(SqliteStore.open(tmp.dir, { catchUpTimeoutMs: 300, checkpointThread: deaf.start }));
    // The thread says the WAL is long: writes are held until the (deaf) catch-up times out.
    deaf.thread().emit('message', 'long');
    const answers = Promise.all([collector.ingest(job(1)), collector.ingest(job(2))]);
    const closed = collector.close();
    await vi.advanceTimersByTimeAsync(299);
    expect(await settledNow(answers)).toBe(false);
    expect(await settledNow(closed)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settledNow(answers)).toBe(true);
    const outcomes = await answers;
    expect(outcomes.flat().every((o) => o.status === 'accepted')).toBe(true);
    await closed;
  } finally {
    vi.useRealTimers();
  }
  const reopened = openSqlite(tmp.dir);
  expect(reopened.prepare('SELECT count(*) FROM events').pluck().get()).toBe(200);
  reopened.close();
});
