import { setTimeout as sleep } from 'node:timers/promises';
import { type Deployment, type Log, RAISED_LIMITS } from './deploy.js';
import { httpClosedLoop } from './http-loop.js';
import { type LoadFigures, closedLoop } from './load.js';
import { constantRate } from './paced-load.js';
import type { BodyPool } from './payloads.js';
import { busiestThreadSeconds, cpuSeconds, machineBusySeconds, postgresCpuSeconds, threadCpu } from './proc-stats.js';
import { DEFAULT_KEY_RPS_WINDOW, PACING_SHARE, TenantCursor, heldShare } from './tenants.js';

/** The share of the peak rate at which the latency target is checked. */
export const SLO_LOAD = 0.8;

/** Why a row does not measure the server's speed: the load generator held it back; null when it did not (or hardly). */
export function pacingNote(r: Pick<Row, 'heldBack'>): string | null {
  const h = r.heldBack;
  if (h === undefined || h.share <= PACING_SHARE) return null;
  return `the load generator waited ${(h.share * 100).toFixed(0)}% of its time to stay within the limits: the row measures that pacing, not the server`;
}

/** One row of the table: one measured phase of one deployment, client side and server side. */
export interface Row extends LoadFigures {
  system: string;
  /** What the phase was: big, big_at_80, small, gzip, tenants, fill, big_full, big_full_at_80, big_fresh_after. */
  workload: string;
  /** How the table shows it. */
  label: string;
  itemsPerRequest: number;
  connections: number;
  /** Servers the load was spread over. */
  servers: number;
  /** Peak resident memory of the servers during this phase (the highest of them). */
  peakRssMiB: number;
  /** User + system CPU of the server processes, all of them together. */
  serverCpuSec: number;
  serverUsPerEvent: number;
  /**
   * CPU of each server's busiest thread (the one that answers requests),
   * summed over the servers, per event: a part of serverUsPerEvent that
   * other threads (V8's helpers, checks, checkpoints) do not blur, so an A/B
   * sees a change of a few percent on that thread. Null where /proc cannot tell.
   */
  requestUsPerEvent?: number | null;
  /** CPU of PostgreSQL's processes meanwhile; null when the store is SQLite or they are not visible. */
  dbCpuSec: number | null;
  dbUsPerEvent: number | null;
  /** For a constant-rate phase: requests per second offered. */
  offeredPerSec?: number;
  /** Times the body pool was re-sent with fresh insert_ids (0 is the plain case). */
  poolWraps: number;
  /**
   * CPU seconds used meanwhile by everything but the servers, the load
   * generator and PostgreSQL: other work on the machine, which makes the
   * figures noisy.
   */
  otherCpuSec: number;
  /** Events in the store when the phase began (counted from the answers). */
  storedAtStart: number;
  /** For a baseline measured in two halves around Inlet's phase: each half's events/s. */
  halvesEventsPerSec?: [number, number];
  /**
   * For the tenants workload: requests the client held back to stay within
   * the limits, and `share`, the part of the connections' time spent waiting
   * (heldShare). Past PACING_SHARE the row measures the load generator's
   * pacing, not the server: it is flagged like a 429.
   */
  heldBack?: { skipped: number; waitedMs: number; share: number };
}

type Shape = Pick<Row, 'workload' | 'label' | 'itemsPerRequest' | 'connections'>;

/**
 * Before every measured phase: waits until the whole machine uses under a
 * fifth of a core over a quarter of a second, so that work left over from the
 * phase before (a checkpoint, merges, a database server's own upkeep) slows
 * neither side. Gives up after 10 s, and says so.
 */
export async function quiet(what: string, log: Log): Promise<void> {
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

/** One measured phase: quiet machine first, then the load, with the servers' (and PostgreSQL's) CPU and memory around it. */
export async function measure(d: Deployment, shape: Shape, load: () => Promise<LoadFigures>, log: Log): Promise<Row> {
  await quiet(`${d.name} ${shape.label}`, log);
  const pids = d.pids;
  d.takePhasePeakMiB();
  const storedAtStart = d.stored;
  const cpu0 = sum(pids.map(cpuSeconds));
  const threads0 = pids.map(threadCpu);
  const db0 = d.countsDb ? postgresCpuSeconds() : 0;
  const machine0 = machineBusySeconds();
  const f = await load();
  const serverCpuSec = sum(pids.map(cpuSeconds)) - cpu0;
  const requestSec = sum(pids.map((pid, i) => busiestThreadSeconds(threads0[i]!, threadCpu(pid))));
  const dbCpuSec = d.countsDb && db0 > 0 ? postgresCpuSeconds() - db0 : null;
  const machineSec = machineBusySeconds() - machine0;
  d.stored += f.accepted - f.duplicates;
  const events = f.eventsPerSec * f.seconds;
  const row: Row = {
    ...f,
    system: d.name,
    ...shape,
    servers: pids.length,
    peakRssMiB: d.takePhasePeakMiB(),
    serverCpuSec,
    serverUsPerEvent: perEventUs(serverCpuSec, events),
    requestUsPerEvent: requestSec > 0 ? perEventUs(requestSec, events) : null,
    dbCpuSec,
    dbUsPerEvent: dbCpuSec === null ? null : perEventUs(dbCpuSec, events),
    poolWraps: 0,
    otherCpuSec: Math.max(0, machineSec - serverCpuSec - f.loadgenCpuSec - (dbCpuSec ?? 0)),
    storedAtStart,
  };
  report(row, log);
  return row;
}

function report(r: Row, log: Log): void {
  const db = r.dbUsPerEvent === null ? '' : `, PostgreSQL ${r.dbUsPerEvent.toFixed(1)} µs/event`;
  log(`  ${r.system} ${r.label}: ${fmt(r.eventsPerSec)} events/s, ${fmt(r.requestsPerSec)} req/s, p99 ${r.p99Ms.toFixed(1)} ms, server ${r.serverUsPerEvent.toFixed(1)} µs/event${db}`);
  if (r.otherCpuSec > 0.1 * r.seconds) log(`  ! ${r.system} ${r.label}: other processes used ${r.otherCpuSec.toFixed(1)} CPU s meanwhile`);
  if (r.non2xx + r.errors + r.refusedItems > 0) {
    log(`  ! ${r.system} ${r.label}: ${r.non2xx} non-2xx (${r.rateLimited} of them 429), ${r.errors} errors, ${r.refusedItems} refused items; first: ${r.firstRefusal ?? '-'}`);
  }
}

/** An unmeasured run of the same load, so the JIT and caches are warm; what it stores still counts. */
export async function warmUp(d: Deployment, seconds: number, load: (seconds: number) => Promise<LoadFigures>): Promise<void> {
  if (seconds <= 0) return;
  const f = await load(seconds);
  d.stored += f.accepted - f.duplicates;
  await sleep(500);
}

/** Closed loop of one pool against the deployment's first server and first key, after a warm-up. */
export async function peak(d: Deployment, pool: BodyPool, connections: number, seconds: number, warmupSeconds: number, log: Log, shape?: Partial<Shape>): Promise<Row> {
  const cursor = d.cursor(pool);
  const target = { url: d.urls[0]!, key: d.tenants[0]!.key };
  await warmUp(d, warmupSeconds, (s) => closedLoop(target, cursor, connections, s));
  const wraps0 = cursor.wraps;
  const row = await measure(
    d,
    { workload: pool.name, label: pool.name, itemsPerRequest: pool.itemsPerBody, connections, ...shape },
    () => closedLoop(target, cursor, connections, seconds),
    log,
  );
  row.poolWraps = cursor.wraps - wraps0;
  await sleep(1000);
  return row;
}

/**
 * Two deployments' peaks taken in slices of `sliceSeconds`, one side then
 * the other (the order swapped each pair), for `seconds` each in all, after
 * each side's warm-up: the machine's speed, which drifts over seconds to
 * minutes, falls on both sides alike. Each side's server CPU is read over
 * the whole span, so what it does between its slices (checkpoints, folds,
 * collections) is its own; PostgreSQL's (one server for both sides) is read
 * around each slice and counted to the side under load. The load's figures
 * add up over its slices, and a latency percentile is the largest of its
 * slices'. The requests in flight when a slice ends are dropped by the load
 * generator uncounted, though the server does their work: a connection's
 * request a slice (on `big`, 8 × 500 events, about 5% of a 1 s slice), the
 * same number on both sides, so CPU per event reads that much high and
 * events/s low on both, and B/A hardly moves.
 */
export async function interleavedPeaks(
  ds: [Deployment, Deployment], pool: BodyPool, connections: number, seconds: number, sliceSeconds: number, warmupSeconds: number, log: Log,
): Promise<[Row, Row]> {
  const sides = ds.map((d) => ({ d, cursor: d.cursor(pool), target: { url: d.urls[0]!, key: d.tenants[0]!.key } }));
  for (const s of sides) await warmUp(s.d, warmupSeconds, (t) => closedLoop(s.target, s.cursor, connections, t));
  await quiet(`${ds[0].name} and ${ds[1].name} ${pool.name}, interleaved`, log);
  const wraps0 = sides.map((s) => s.cursor.wraps);
  const stored0 = sides.map((s) => s.d.stored);
  for (const s of sides) s.d.takePhasePeakMiB();
  const cpu0 = sides.map((s) => sum(s.d.pids.map(cpuSeconds)));
  const threads0 = sides.map((s) => s.d.pids.map(threadCpu));
  const machine0 = machineBusySeconds();
  const loads: (LoadFigures | null)[] = [null, null];
  const dbSec = [0, 0];
  const countsDb = ds[0].countsDb;
  const slices = Math.max(1, Math.round(seconds / sliceSeconds));
  for (let k = 0; k < slices; k++) {
    for (const i of k % 2 === 0 ? [0, 1] : [1, 0]) {
      const db0 = countsDb ? postgresCpuSeconds() : 0;
      const f = await closedLoop(sides[i]!.target, sides[i]!.cursor, connections, sliceSeconds);
      if (countsDb) dbSec[i]! += postgresCpuSeconds() - db0;
      sides[i]!.d.stored += f.accepted - f.duplicates;
      loads[i] = loads[i] === null ? f : addLoads(loads[i]!, f);
    }
  }
  const machineSec = machineBusySeconds() - machine0;
  const rows = sides.map((s, i): Row => {
    const f = loads[i]!;
    const serverCpuSec = sum(s.d.pids.map(cpuSeconds)) - cpu0[i]!;
    const requestSec = sum(s.d.pids.map((pid, j) => busiestThreadSeconds(threads0[i]![j]!, threadCpu(pid))));
    const events = f.eventsPerSec * f.seconds;
    return {
      ...f,
      system: s.d.name,
      workload: pool.name,
      label: `${pool.name} (slices of ${sliceSeconds} s)`,
      itemsPerRequest: pool.itemsPerBody,
      connections,
      servers: s.d.pids.length,
      peakRssMiB: s.d.takePhasePeakMiB(),
      serverCpuSec,
      serverUsPerEvent: perEventUs(serverCpuSec, events),
      requestUsPerEvent: requestSec > 0 ? perEventUs(requestSec, events) : null,
      dbCpuSec: countsDb ? dbSec[i]! : null,
      dbUsPerEvent: countsDb ? perEventUs(dbSec[i]!, events) : null,
      poolWraps: s.cursor.wraps - wraps0[i]!,
      otherCpuSec: 0,
      storedAtStart: stored0[i]!,
    };
  });
  // The machine's other work over the span, halved: the sides shared it.
  const other = Math.max(0, machineSec - sum(rows.map((r) => r.serverCpuSec + r.loadgenCpuSec + (r.dbCpuSec ?? 0))));
  for (const r of rows) {
    r.otherCpuSec = other / 2;
    report(r, log);
  }
  await sleep(1000);
  return [rows[0]!, rows[1]!];
}

/** One side's load over two of its slices: counts and times add up; a percentile is the larger of the two. */
function addLoads(a: LoadFigures, b: LoadFigures): LoadFigures {
  const seconds = a.seconds + b.seconds;
  const requests = a.requests + b.requests;
  const events = a.eventsPerSec * a.seconds + b.eventsPerSec * b.seconds;
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
    rateLimited: a.rateLimited + b.rateLimited,
    errors: a.errors + b.errors,
    timeouts: a.timeouts + b.timeouts,
    accepted: a.accepted + b.accepted,
    duplicates: a.duplicates + b.duplicates,
    refusedItems: a.refusedItems + b.refusedItems,
    droppedItems: a.droppedItems + b.droppedItems,
    loadgenCpuSec: a.loadgenCpuSec + b.loadgenCpuSec,
    firstRefusal: a.firstRefusal ?? b.firstRefusal,
  };
}

/** The same bodies at a constant rate (open loop, up to 64 sockets), continuing the pool's cursor. */
export async function paced(d: Deployment, pool: BodyPool, perSecond: number, seconds: number, log: Log, shape?: Partial<Shape>): Promise<Row> {
  const cursor = d.cursor(pool);
  const target = { url: d.urls[0]!, key: d.tenants[0]!.key };
  const wraps0 = cursor.wraps;
  const row = await measure(
    d,
    { workload: `${pool.name}_at_80`, label: `${pool.name} @${perSecond.toFixed(0)}/s`, itemsPerRequest: pool.itemsPerBody, connections: 64, ...shape },
    () => constantRate(target, cursor, perSecond, seconds, 64),
    log,
  );
  row.offeredPerSec = perSecond;
  row.poolWraps = cursor.wraps - wraps0;
  await sleep(1000);
  return row;
}

/**
 * The tenants workload: the big bodies, re-keyed per tenant, each tenant with
 * `usersPerTenant` users of its own, round robin over the tenants' keys, each
 * tenant kept under 90% of the windows its answers name. Run on a deployment
 * with raised limits, the windows are far off and nothing waits; with the
 * defaults, the pacing shows in `heldBack` and flags the row. `probeItems`
 * were sent to each server's tenant before (the probe) and count in its windows.
 */
export async function tenantsRun(
  d: Deployment,
  pool: BodyPool,
  o: { probeItems: number; connections: number; seconds: number; warmupSeconds: number; usersPerTenant: number },
  log: Log,
): Promise<Row> {
  if (d.policy.length === 0) throw new Error(`${d.name}: the answers name no RateLimit-Policy, so its limits are off; the tenants workload counts them (raised or default)`);
  const keyRps = d.limits === 'raised' ? Number(RAISED_LIMITS.INLET_LIMIT_KEY_RPS) : DEFAULT_KEY_RPS_WINDOW.limit;
  const windows = [...d.policy, { ...DEFAULT_KEY_RPS_WINDOW, limit: keyRps }];
  const cursor = new TenantCursor(pool, d.tenants, windows, undefined, undefined, o.usersPerTenant);
  for (let i = 0; i < d.servers.length; i++) cursor.account(i % d.tenants.length, o.probeItems);
  log(
    `  ${d.name} tenants: ${d.tenants.length} projects of ${fmt(o.usersPerTenant)} users, each within ${windows.map((p) => `${p.name} ${fmt(p.limit)} ${p.unit}/${p.windowMs / 1000} s`).join(', ')} (kept under 90% of each)`,
  );
  return tenantsPhase(d, cursor, o.connections, o.seconds, o.warmupSeconds, log);
}

/** Closed loop over every tenant in turn and every server of the deployment, after a warm-up. */
async function tenantsPhase(d: Deployment, cursor: TenantCursor, connections: number, seconds: number, warmupSeconds: number, log: Log): Promise<Row> {
  const load = (s: number) =>
    httpClosedLoop({ urls: d.urls, path: '/api/v1/batch', connections, itemsPerBody: cursor.pool.itemsPerBody, gzip: false, next: () => cursor.next(), seconds: s });
  await warmUp(d, warmupSeconds, load);
  const skipped0 = cursor.skipped;
  const waited0 = cursor.waitedMs;
  const defaults = d.limits === 'default' ? ', default limits' : '';
  const row = await measure(
    d,
    {
      workload: d.limits === 'default' ? 'tenants_default_limits' : 'tenants',
      label: `tenants x${cursor.tenants.length}${d.servers.length > 1 ? `, ${d.servers.length} servers` : ''}${defaults}`,
      itemsPerRequest: cursor.pool.itemsPerBody,
      connections,
    },
    () => load(seconds),
    log,
  );
  const waitedMs = cursor.waitedMs - waited0;
  row.heldBack = { skipped: cursor.skipped - skipped0, waitedMs, share: heldShare(waitedMs, row.seconds, connections) };
  if (row.heldBack.skipped > 0 || waitedMs > 0) {
    log(`  ${d.name} tenants: the client skipped ${row.heldBack.skipped} turns and waited ${fmt(waitedMs)} ms (${(row.heldBack.share * 100).toFixed(1)}% of its connections' time) to stay within the limits`);
  }
  const pacing = pacingNote(row);
  if (pacing !== null) log(`  ! ${d.name} ${row.label}: ${pacing}`);
  if (row.rateLimited > 0) log(`  ! ${d.name} tenants: ${row.rateLimited} answers were 429: the load went past a project's limits, so this row does not measure "within limits"`);
  await sleep(1000);
  return row;
}

/**
 * Fills the store through the running server (POST /api/v1/import, many
 * connections) until it holds `target` events, counted from the answers.
 */
export async function fill(d: Deployment, pool: BodyPool, target: number, connections: number, log: Log): Promise<Row | null> {
  if (d.stored >= target) return null;
  const cursor = d.cursor(pool);
  const from = d.stored;
  // From the first request on, not from before the wait for a quiet machine.
  let t0 = -1;
  let shown = 0;
  const until = (stored: number): boolean => {
    const now = performance.now();
    if (t0 < 0) t0 = shown = now;
    if (now - shown >= 15_000) {
      shown = now;
      log(`  ${d.name} fill: ${fmt(from + stored)} of ${fmt(target)} stored, ${fmt(stored / ((now - t0) / 1000))} events/s`);
    }
    return from + stored >= target;
  };
  const wraps0 = cursor.wraps;
  const row = await measure(
    d,
    { workload: 'fill', label: `fill to ${short(target)}`, itemsPerRequest: pool.itemsPerBody, connections },
    () =>
      httpClosedLoop({
        urls: d.urls,
        path: '/api/v1/import',
        connections,
        itemsPerBody: pool.itemsPerBody,
        gzip: false,
        next: () => ({ key: d.tenants[0]!.key, body: cursor.next() }),
        seconds: Number.POSITIVE_INFINITY,
        until: (tally) => until(tally.stored),
      }),
    log,
  );
  row.poolWraps = cursor.wraps - wraps0;
  return row;
}

/**
 * One workload's figures from two phases of the same server. Counts and
 * times add up; rates are over the time of both. Latency percentiles cannot
 * be merged from the two summaries, so each is the larger of the two.
 */
export function combineHalves(a: Row, b: Row): Row {
  const load = addLoads(a, b);
  const events = load.eventsPerSec * load.seconds;
  const serverCpuSec = a.serverCpuSec + b.serverCpuSec;
  const dbCpuSec = a.dbCpuSec === null || b.dbCpuSec === null ? null : a.dbCpuSec + b.dbCpuSec;
  return {
    ...a,
    ...load,
    peakRssMiB: Math.max(a.peakRssMiB, b.peakRssMiB),
    serverCpuSec,
    serverUsPerEvent: perEventUs(serverCpuSec, events),
    requestUsPerEvent:
      typeof a.requestUsPerEvent === 'number' && typeof b.requestUsPerEvent === 'number'
        ? events > 0 ? (a.requestUsPerEvent * a.eventsPerSec * a.seconds + b.requestUsPerEvent * b.eventsPerSec * b.seconds) / events : 0
        : null,
    dbCpuSec,
    dbUsPerEvent: dbCpuSec === null ? null : perEventUs(dbCpuSec, events),
    poolWraps: a.poolWraps + b.poolWraps,
    otherCpuSec: a.otherCpuSec + b.otherCpuSec,
    halvesEventsPerSec: [a.eventsPerSec, b.eventsPerSec],
  };
}

/** CPU microseconds per event (CPU seconds per million events); 0 when no event was measured. */
export function perEventUs(cpuSec: number, events: number): number {
  return events > 0 ? (cpuSec / events) * 1e6 : 0;
}

function sum(xs: number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}

export function fmt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** 5,000,000 as 5M, 200,000 as 200k. */
export function short(n: number): string {
  if (n >= 1e6) return `${+(n / 1e6).toFixed(1)}M`;
  if (n >= 1e3) return `${+(n / 1e3).toFixed(0)}k`;
  return String(n);
}
