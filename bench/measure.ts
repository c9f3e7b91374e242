import { setTimeout as sleep } from 'node:timers/promises';
import type { BenchConfig, WorkloadName } from './config.js';
import { type LoadFigures, type Target, closedLoop } from './load.js';
import { constantRate } from './paced-load.js';
import { BodyCursor, type BodyPool } from './payloads.js';
import { RssWatch, cpuSeconds, machineBusySeconds } from './proc-stats.js';

/** The share of the peak rate at which the latency target is checked. */
export const SLO_LOAD = 0.8;

/** The figures of one workload against one server, client side and server side. */
export interface WorkloadFigures extends LoadFigures {
  workload: string;
  itemsPerRequest: number;
  connections: number;
  /** Peak resident memory of the server during this workload. */
  peakRssMiB: number;
  serverCpuSec: number;
  cpuSecPerMillionEvents: number;
  /** For the constant-rate run: requests per second offered. */
  offeredPerSec?: number;
  /** Times the body pool was re-sent with fresh insert_ids (0 is the plain case). */
  poolWraps: number;
  /**
   * CPU seconds used meanwhile by everything but the server and the load
   * generator (the database server among them): other work on the machine
   * shows here, and makes the figures noisy.
   */
  otherCpuSec: number;
}

export interface SystemRun {
  system: string;
  workloads: Partial<Record<WorkloadName | 'big_at_80', WorkloadFigures>>;
  /** VmHWM: the most memory the server held at any moment of the run. */
  lifetimePeakRssMiB: number;
}

export type Log = (line: string) => void;

/**
 * Runs every workload against one server: a warm-up, the measured closed-loop
 * run, and after the big batches (when asked) the constant-rate run at 80 %
 * of the rate just measured. A server that `stores` gets fresh insert_ids
 * however long the run.
 */
export async function measureSystem(
  system: string,
  target: Target,
  pid: number,
  pools: Record<WorkloadName, BodyPool>,
  cfg: BenchConfig,
  opts: { withSlo: boolean; stores: boolean },
  log: Log,
): Promise<SystemRun> {
  const rss = new RssWatch(pid);
  const run: SystemRun = { system, workloads: {}, lifetimePeakRssMiB: 0 };
  try {
    for (const name of cfg.workloads) {
      const pool = pools[name];
      const cursor = new BodyCursor(pool, opts.stores);
      const connections = name === 'small' ? cfg.smallConnections : cfg.connections;
      if (cfg.warmupSeconds > 0) {
        await closedLoop(target, cursor, connections, cfg.warmupSeconds);
        await sleep(500);
      }
      const peak = await phase(pid, rss, pool, cursor, connections, () => closedLoop(target, cursor, connections, cfg.seconds));
      run.workloads[name] = { ...peak, workload: name };
      log(`  ${system} ${name}: ${fmt(peak.eventsPerSec)} events/s, ${fmt(peak.requestsPerSec)} req/s, p99 ${peak.p99Ms.toFixed(1)} ms`);
      if (peak.otherCpuSec > 0.1 * peak.seconds) log(`  ! ${system} ${name}: other processes used ${peak.otherCpuSec.toFixed(1)} CPU s meanwhile (a database server counts here)`);
      if (peak.non2xx + peak.errors + peak.refusedItems > 0) log(`  ! ${system} ${name}: ${peak.non2xx} non-2xx, ${peak.errors} errors, ${peak.refusedItems} refused items; first: ${peak.firstRefusal ?? '-'}`);
      await sleep(1000);
      if (name === 'big' && opts.withSlo) {
        const rate = Math.max(1, peak.requestsPerSec * SLO_LOAD);
        const slo = await phase(pid, rss, pool, cursor, 64, () => constantRate(target, cursor, rate, cfg.seconds, 64));
        run.workloads.big_at_80 = { ...slo, workload: 'big_at_80', offeredPerSec: rate };
        log(`  ${system} big at ${SLO_LOAD * 100}% (${rate.toFixed(1)} req/s): p50 ${slo.p50Ms.toFixed(1)} ms, p99 ${slo.p99Ms.toFixed(1)} ms`);
        await sleep(1000);
      }
    }
    run.lifetimePeakRssMiB = rss.lifetimePeakMiB();
  } finally {
    rss.stop();
  }
  return run;
}

async function phase(
  pid: number,
  rss: RssWatch,
  pool: BodyPool,
  cursor: BodyCursor,
  connections: number,
  load: () => Promise<LoadFigures>,
): Promise<Omit<WorkloadFigures, 'workload'>> {
  rss.takePhasePeakMiB();
  const wraps0 = cursor.wraps;
  const cpu0 = cpuSeconds(pid);
  const machine0 = machineBusySeconds();
  const f = await load();
  const serverCpuSec = cpuSeconds(pid) - cpu0;
  const machineSec = machineBusySeconds() - machine0;
  const events = f.eventsPerSec * f.seconds;
  return {
    ...f,
    itemsPerRequest: pool.itemsPerBody,
    connections,
    peakRssMiB: rss.takePhasePeakMiB(),
    serverCpuSec,
    cpuSecPerMillionEvents: events > 0 ? (serverCpuSec / events) * 1e6 : 0,
    poolWraps: cursor.wraps - wraps0,
    otherCpuSec: Math.max(0, machineSec - serverCpuSec - f.loadgenCpuSec),
  };
}

export function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}
