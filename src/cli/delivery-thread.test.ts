import { readFileSync, readdirSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { expect, it } from 'vitest';
import { sqliteTestDir } from '../../test/helpers/sqlite.js';
import { threadPolicy } from '../thread-priority.js';
import { DELIVERY_THREAD_URL, type DeliveryThreadData } from './delivery-thread.js';

const dir = sqliteTestDir('inlet-delivery-thread-');

/** The scheduling policy of each of this process's threads, by thread id (0 normal, 5 idle). */
function policies(): Map<string, number> {
  const out = new Map<string, number>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      out.set(tid, Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]));
    } catch {
      // A thread that ended while listed.
    }
  }
  return out;
}

it.runIf(process.platform === 'linux')('runs in the idle scheduling class, and leaves every other thread of the server as it was', async () => {
  dir.open();
  const before = policies();
  expect([...before.values()].every((p) => p === 0)).toBe(true);
  const data: DeliveryThreadData = { dataDir: dir.dir, databaseUrl: null, reach: { allowPrivate: false, ownDatabaseUrl: null, selfPort: null } };
  const worker = new Worker(DELIVERY_THREAD_URL, { workerData: data });
  try {
    await expect.poll(() => [...policies()].filter(([tid, p]) => p === 5 && !before.has(tid)).length, { timeout: 15_000 }).toBe(1);
    expect(threadPolicy()).toBe(0);
    for (const [tid, p] of policies()) if (before.has(tid)) expect(p).toBe(0);
  } finally {
    await worker.terminate();
  }
});
