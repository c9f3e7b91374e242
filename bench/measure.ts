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
  /** For a baseline measured in two halves around Inlet's phase: each half's events/s. */
  halvesEventsPerSec?: [number, number];
}

export interface SystemRun {
  system: string;
  workloads: Partial<Record<WorkloadName | 'big_at_80', WorkloadFigures>>;
  /** VmHWM: the most memory the server held at any moment of the run. */
  lifetimePeakRssMiB: number;
}

export type Log = (line: string) => void;

/**
 * The HTTP baseline, measured around each of Inlet's peak phases: half its
 * time just before, half just after. This machine's speed drifts by a
 * quarter within ten seconds. A baseline taken a minute or more before
 * Inlet's phase carried that offset into the ratio; taken on both sides, a
 * steady drift falls on both terms (faster swings remain noise).
 */
export interface PairedBaseline {
  system: string;
  target: Target;
  pid: number;
}

/**
 * Runs every workload against one server: a warm-up, the measured closed-loop
 * run, and after the big batches (when asked) the constant-rate run at 80 %
 * of the rate just measured. A server that `stores` gets fresh insert_ids
 * however long the run. With a `baseline`, each closed-loop run is bracketed
 * by two halves of the baseline's (see PairedBaseline).
 */
export async function measureSystem(
  system: string,
  target: Target,
  pid: number,
  pools: Record<WorkloadName, BodyPool>,
  cfg: BenchConfig,
  opts: { withSlo: boolean; stores: boolean; baseline?: PairedBaseline },
  log: Log,
): Promise<{ run: SystemRun; baseline: SystemRun | null }> {
  const rss = new RssWatch(pid);
  const run: SystemRun = { system, workloads: {}, lifetimePeakRssMiB: 0 };
  const b = opts.baseline;
  const baseRss = b === undefined ? null : new RssWatch(b.pid);
  const baseRun: SystemRun | null = b === undefined ? null : { system: b.system, workloads: {}, lifetimePeakRssMiB: 0 };
  try {
    for (const name of cfg.workloads) {
      const pool = pools[name];
      const cursor = new BodyCursor(pool, opts.stores);
      const connections = name === 'small' ? cfg.smallConnections : cfg.connections;
      // The baseline stores nothing: its bodies never need fresh insert_ids.
      const baseCursor = new BodyCursor(pool, false);
      const baseHalf = b === undefined ? null : () => baselineHalf(b, baseRss!, pool, baseCursor, connections, cfg, log);
      const before = baseHalf === null ? null : await baseHalf();
      await quiet(`${system} ${name}`, log);
      await warmUp(target, cursor, connections, cfg);
      const peak = await phase(pid, rss, pool, cursor, connections, () => closedLoop(target, cursor, connections, cfg.seconds));
      run.workloads[name] = { ...peak, workload: name };
      log(`  ${system} ${name}: ${fmt(peak.eventsPerSec)} events/s, ${fmt(peak.requestsPerSec)} req/s, p99 ${peak.p99Ms.toFixed(1)} ms`);
      if (peak.otherCpuSec > 0.1 * peak.seconds) log(`  ! ${system} ${name}: other processes used ${peak.otherCpuSec.toFixed(1)} CPU s meanwhile (a database server counts here)`);
      if (peak.non2xx + peak.errors + peak.refusedItems > 0) log(`  ! ${system} ${name}: ${peak.non2xx} non-2xx, ${peak.errors} errors, ${peak.refusedItems} refused items; first: ${peak.firstRefusal ?? '-'}`);
      await sleep(1000);
      if (baseHalf !== null) {
        const after = await baseHalf();
        const both = combineHalves(before!, after);
        baseRun!.workloads[name] = { ...both, workload: name };
        const drift = before!.eventsPerSec > 0 ? (after.eventsPerSec / before!.eventsPerSec - 1) * 100 : 0;
        log(
          `  ${b!.system} ${name}: ${fmt(before!.eventsPerSec)} events/s before, ${fmt(after.eventsPerSec)} after (${drift >= 0 ? '+' : ''}${drift.toFixed(0)}%)`,
        );
        await sleep(500);
      }
      if (name === 'big' && opts.withSlo) {
        const rate = Math.max(1, peak.requestsPerSec * SLO_LOAD);
        await quiet(`${system} big at ${SLO_LOAD * 100}%`, log);
        const slo = await phase(pid, rss, pool, cursor, 64, () => constantRate(target, cursor, rate, cfg.seconds, 64));
        run.workloads.big_at_80 = { ...slo, workload: 'big_at_80', offeredPerSec: rate };
        log(`  ${system} big at ${SLO_LOAD * 100}% (${rate.toFixed(1)} req/s): p50 ${slo.p50Ms.toFixed(1)} ms, p99 ${slo.p99Ms.toFixed(1)} ms`);
        await sleep(1000);
      }
    }
    run.lifetimePeakRssMiB = rss.lifetimePeakMiB();
    // Not VmHWM: the baseline's process serves every store's pass, so only this pass's phases count.
    if (baseRun !== null) baseRun.lifetimePeakRssMiB = Math.max(0, ...Object.values(baseRun.workloads).map((w) => w.peakRssMiB));
  } finally {
    rss.stop();
    baseRss?.stop();
  }
  return { run, baseline: baseRun };
}

/** Half of the baseline's measured time, with a quiet machine and a warm-up before it. */
async function baselineHalf(
  b: PairedBaseline,
  rss: RssWatch,
  pool: BodyPool,
  cursor: BodyCursor,
  connections: number,
  cfg: BenchConfig,
  log: Log,
): Promise<Omit<WorkloadFigures, 'workload'>> {
  await quiet(`${b.system} ${pool.name}`, log);
  await warmUp(b.target, cursor, connections, cfg);
  return phase(b.pid, rss, pool, cursor, connections, () => closedLoop(b.target, cursor, connections, cfg.seconds / 2));
}

async function warmUp(target: Target, cursor: BodyCursor, connections: number, cfg: BenchConfig): Promise<void> {
  if (cfg.warmupSeconds <= 0) return;
  await closedLoop(target, cursor, connections, cfg.warmupSeconds);
  await sleep(500);
}

/**
 * Before every measured phase: waits until the whole machine uses under a
 * fifth of a core over a quarter of a second, so that work left over from the
 * phase before (a checkpoint, merges, a database server's own upkeep) slows
 * neither system. Gives up after 10 s, and says so.
 */
async function quiet(what: string, log: Log): Promise<void> {
  const until = performance.now() + 10_000;
  let busy = 0;
  while (performance.now() < until) {
    const c0 = machineBusySeconds();
    await sleep(250);
    busy = (machineBusySeconds() - c0) / 0.25;
    if (busy < 0.2) return;
  }
  log(`  ! ${what}: the machine was still ${(busy * 100).toFixed(0)}% of a core busy after 10 s of waiting; started anyway`);
}

/**
 * One workload's figures from two phases of the same server. Counts and
 * times add up; rates are over the time of both. Latency percentiles cannot
 * be merged from the two summaries, so each is the larger of the two.
 */
export function combineHalves(a: Omit<WorkloadFigures, 'workload'>, b: Omit<WorkloadFigures, 'workload'>): Omit<WorkloadFigures, 'workload'> {
  const seconds = a.seconds + b.seconds;
  const requests = a.requests + b.requests;
  const events = a.eventsPerSec * a.seconds + b.eventsPerSec * b.seconds;
  const serverCpuSec = a.serverCpuSec + b.serverCpuSec;
  const firstRefusal = a.firstRefusal ?? b.firstRefusal;
  return {
    seconds,
    requests,
    eventsPerSec: seconds > 0 ? events / seconds : 0,
    requestsPerSec: seconds > 0 ? requests / seconds : 0,
    p50Ms: Math.max(a.p50Ms, b.p50Ms),
    p90Ms: Math.max(a.p90Ms, b.p90Ms),
    p99Ms: Math.max(a.p99Ms, b.p99Ms),
    maxMs: Math.max(a.maxMs, b.maxMs),
    non2xx: a.non2xx + b.non2xx,
    errors: a.errors + b.errors,
    timeouts: a.timeouts + b.timeouts,
    accepted: a.accepted + b.accepted,
    duplicates: a.duplicates + b.duplicates,
    refusedItems: a.refusedItems + b.refusedItems,
    droppedItems: a.droppedItems + b.droppedItems,
    loadgenCpuSec: a.loadgenCpuSec + b.loadgenCpuSec,
    ...(firstRefusal !== undefined ? { firstRefusal } : {}),
    itemsPerRequest: a.itemsPerRequest,
    connections: a.connections,
    peakRssMiB: Math.max(a.peakRssMiB, b.peakRssMiB),
    serverCpuSec,
    cpuSecPerMillionEvents: events > 0 ? (serverCpuSec / events) * 1e6 : 0,
    poolWraps: a.poolWraps + b.poolWraps,
    otherCpuSec: a.otherCpuSec + b.otherCpuSec,
    halvesEventsPerSec: [a.eventsPerSec, b.eventsPerSec],
  };
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
