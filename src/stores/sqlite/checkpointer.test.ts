import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { tempDir } from '../../../test/helpers/fixture.js';
import type { IngestJob } from '../../domain/ingest/job.js';
import { RECEIVED_AT, collectorOn, ingestJob } from '../../../test/helpers/items.js';
import { Checkpointer } from './checkpointer.js';
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
  const store = await collectorOn(SqliteStore.open(tmp.dir, { longFrames: 200, sizeLimitBytes: 512 * 1024, checkpointEveryMs: 100 }));
  const wal = join(tmp.dir, 'inlet.db-wal');
  let largest = 0;
  // Commits back to back for about 3 s, many times the WAL's limit of pages.
  const until = Date.now() + 3000;
  let n = 0;
  while (Date.now() < until) {
    await Promise.all(Array.from({ length: 4 }, () => store.ingest(job(n++))));
    largest = Math.max(largest, statSync(wal).size);
  }
  const dbSize = statSync(join(tmp.dir, 'inlet.db')).size;
  await store.close();
  expect(n).toBeGreaterThan(200);
  expect(dbSize).toBeGreaterThan(4 * 1024 * 1024);
  // Left to PASSIVE checkpoints alone the WAL grew to about 9 times the database
  // here (284 MB for 32 MB); starting over keeps it under the database's size,
  // give or take what is written between two passes of the thread.
  expect(largest).toBeLessThan(3 * dbSize);
});

it('an idle WAL, however long, asks for no hold; writes do; a stopped thread holds nothing', async () => {
  const db = openSqlite(tmp.dir);
  db.pragma('wal_autocheckpoint = 0');
  db.exec('CREATE TABLE filler (x TEXT)');
  const add = db.prepare('INSERT INTO filler (x) VALUES (?)');
  db.transaction(() => {
    for (let i = 0; i < 2000; i++) add.run('y'.repeat(1000));
  })();
  const checkpointer = new Checkpointer(db.name, 100, 50);
  let asked = 0;
  checkpointer.whenLong(() => asked++);
  // Long but idle: one ask at most, for the writes made before the thread's first look.
  await new Promise((r) => setTimeout(r, 600));
  expect(asked).toBeLessThanOrEqual(1);
  const idle = asked;
  await new Promise((r) => setTimeout(r, 400));
  expect(asked).toBe(idle);
  await checkpointer.catchUp();

  // Writes that the thread has not copied yet make it ask.
  const stopWriting = Date.now() + 400;
  while (Date.now() < stopWriting) {
    db.transaction(() => {
      for (let i = 0; i < 200; i++) add.run('z'.repeat(1000));
    })();
    await new Promise((r) => setImmediate(r));
  }
  await new Promise((r) => setTimeout(r, 100));
  expect(asked).toBeGreaterThan(idle);

  await checkpointer.stop();
  const started = Date.now();
  await checkpointer.catchUp();
  expect(Date.now() - started).toBeLessThan(50);
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
  // An interval far longer than the test: its own clock never starts a pass here.
  const checkpointer = new Checkpointer(db.name, 1_000_000, 60_000);
  const passDone = async (n: number) => {
    const until = Date.now() + 5000;
    while (checkpointer.passesDone < n && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
    expect(checkpointer.passesDone).toBe(n);
  };
  fill(500);
  checkpointer.committed();
  // A second commit in the same interval asks for nothing more.
  checkpointer.committed();
  await passDone(1);
  // Every frame was copied back, so this write starts the WAL from its beginning.
  fill(1);
  expect(walFrames()).toBeLessThan(10);
  await new Promise((r) => setTimeout(r, 100));
  expect(checkpointer.passesDone).toBe(1);
  await checkpointer.stop();
  db.close();
});

/** Makes the thread deaf to catch-up requests, as a stuck thread would be. */
function deafToCatchUps(checkpointer: Checkpointer): void {
  const worker = (checkpointer as unknown as { worker: { postMessage: (m: unknown) => void } }).worker;
  const post = worker.postMessage.bind(worker);
  worker.postMessage = (m) => {
    if (m !== 'catch-up') post(m);
  };
}

it('a thread that never answers a catch-up holds writes no longer than the timeout', async () => {
  const db = openSqlite(tmp.dir);
  const checkpointer = new Checkpointer(db.name, 1_000_000, 60_000, 150);
  deafToCatchUps(checkpointer);
  const started = Date.now();
  await checkpointer.catchUp();
  expect(Date.now() - started).toBeGreaterThanOrEqual(140);
  expect(Date.now() - started).toBeLessThan(2000);
  await checkpointer.stop();
  db.close();
});

it('jobs that arrive during a hold are committed once it ends, and close() waits for them', async () => {
  const store = await collectorOn(SqliteStore.open(tmp.dir, { catchUpTimeoutMs: 300 }));
  const checkpointer = (store.store as unknown as { checkpointer: Checkpointer }).checkpointer;
  deafToCatchUps(checkpointer);
  // The thread says the WAL is long: writes are held until the (deaf) catch-up times out.
  (checkpointer as unknown as { onLong: () => void }).onLong();
  const started = Date.now();
  const answers = [store.ingest(job(1)), store.ingest(job(2))];
  const closed = store.close();
  const outcomes = await Promise.all(answers);
  expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  expect(outcomes.flat().every((o) => o.status === 'accepted')).toBe(true);
  await closed;
  const reopened = openSqlite(tmp.dir);
  expect(reopened.prepare('SELECT count(*) FROM events').pluck().get()).toBe(200);
  reopened.close();
});
