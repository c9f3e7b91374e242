import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { expect, it } from 'vitest';
import { sqliteTestDir } from '../../test/helpers/sqlite.js';
import { SCHED_IDLE, taskSchedule } from '../thread-priority.js';
import { DELIVERY_THREAD_URL, type DeliveryThreadData } from './delivery-thread.js';

const dir = sqliteTestDir('inlet-delivery-thread-');

/** The scheduling of each of this process's threads, by thread id. */
function schedules(): Map<string, { policy: number; nice: number }> {
  const out = new Map<string, { policy: number; nice: number }>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      out.set(tid, taskSchedule(`/proc/self/task/${tid}/stat`));
    } catch {
      // A thread that ended while listed.
    }
  }
  return out;
}

/** Whether util-linux's chrt is here: without it the thread is at nice 19 only. */
const hasChrt = spawnSync('chrt', ['--version'], { stdio: 'ignore' }).status === 0;

it.runIf(process.platform === 'linux')('runs in the idle scheduling class (nice 19 without chrt), and leaves every other thread of the server as it was', async () => {
  dir.open();
  const before = schedules();
  expect([...before.values()].every((s) => s.policy === 0)).toBe(true);
  const data: DeliveryThreadData = { dataDir: dir.dir, databaseUrl: null, reach: { allowPrivate: false, ownDatabaseUrl: null, selfPort: null } };
  const worker = new Worker(DELIVERY_THREAD_URL, { workerData: data });
  const lowered = (s: { policy: number; nice: number }) => (hasChrt ? s.policy === SCHED_IDLE : s.nice === 19);
  try {
    await expect.poll(() => [...schedules()].filter(([tid, s]) => lowered(s) && !before.has(tid)).length, { timeout: 15_000 }).toBe(1);
    expect(taskSchedule().policy).toBe(0);
    for (const [tid, s] of schedules()) if (before.has(tid)) expect(s).toEqual(before.get(tid));
  } finally {
    await worker.terminate();
  }
});
