import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { expect, it } from 'vitest';
import { sqliteTestDir } from '../../test/helpers/sqlite.js';
import { RemoteCourier } from '../domain/delivery/courier-remote.js';
import { SCHED_IDLE, taskSchedule } from '../thread-priority.js';
import { type DeliveryProcessData, startDeliveryProcess } from './delivery-process.js';

const dir = sqliteTestDir('inlet-delivery-process-');

/** The scheduling of each thread of a process, by thread id. */
function schedules(pid: number | 'self'): Map<string, { policy: number; nice: number }> {
  const out = new Map<string, { policy: number; nice: number }>();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      out.set(tid, taskSchedule(`/proc/${pid}/task/${tid}/stat`));
    } catch {
      // A thread that ended while listed.
    }
  }
  return out;
}

/** Whether util-linux's chrt is here: without it the threads are at nice 19 only. */
const hasChrt = spawnSync('chrt', ['--version'], { stdio: 'ignore' }).status === 0;
const lowered = (s: { policy: number; nice: number }) => (hasChrt ? s.policy === SCHED_IDLE && s.nice === 19 : s.nice === 19);

const data = (): DeliveryProcessData => ({ dataDir: dir.dir, databaseUrl: null, reach: { allowPrivate: false, ownDatabaseUrl: null, selfPort: null } });

it.runIf(process.platform === 'linux')('runs every thread of its own, V8 helpers and all, in the idle class (nice 19 without chrt), and leaves the server as it was', async () => {
  dir.open();
  const before = schedules('self');
  expect([...before.values()].every((s) => s.policy === 0)).toBe(true);
  const port = startDeliveryProcess(data());
  const courier = new RemoteCourier(() => port);
  try {
    // A round trip: the process serves the courier on the store it was given.
    const d = { id: 'd1', projectId: 'p1', kind: 'webhook', config: {}, sources: [], events: [], generation: 1, file: null };
    await expect(courier.lag(d, 0, 0, 10)).resolves.toEqual({ events: 0, oldestAt: null });
    const theirs = schedules(port.pid!);
    // The main thread and V8's helpers (4) at least, each lowered.
    expect(theirs.size).toBeGreaterThanOrEqual(5);
    for (const s of theirs.values()) expect(s, JSON.stringify([...theirs])).toSatisfy(lowered);
    for (const [tid, s] of schedules('self')) if (before.has(tid)) expect(s).toEqual(before.get(tid));
  } finally {
    await courier.close();
  }
  expect(existsSync(`/proc/${port.pid}`)).toBe(false);
});

/** The modules a source file loads before any of its code runs: its static imports and re-exports, side-effect ones included, types left out. */
function staticImports(file: URL): string[] {
  const text = readFileSync(file, 'utf8');
  const found = text.matchAll(/(?:^|;)[ \t]*(?:import|export)(?![ \t]+type\b)(?:[^;'"]*?\bfrom)?[ \t]*['"]([^'"]+)['"]/gm);
  return [...found].map((m) => m[1]!).sort();
}

it('loads what it runs only once it is in the idle class: the entry, and what it imports first, load no courier, sender or store driver (half a second of CPU at every start)', () => {
  expect(staticImports(new URL('./delivery-process.ts', import.meta.url))).toEqual(['../thread-entry.js', '../thread-priority.js', './fatal-errors.js', 'node:child_process', 'node:url']);
  expect(staticImports(new URL('./fatal-errors.ts', import.meta.url))).toEqual(['../edge/log-error.js', 'pino']);
  expect(staticImports(new URL('../edge/log-error.ts', import.meta.url))).toEqual(['node:url']);
  // What it runs comes in by import() after lowestPriorityProcess().
  const text = readFileSync(new URL('./delivery-process.ts', import.meta.url), 'utf8');
  const lowered = text.indexOf('lowestPriorityProcess();');
  expect(lowered).toBeGreaterThan(0);
  expect(text.indexOf('deliveryModules();')).toBeGreaterThan(lowered);
});
