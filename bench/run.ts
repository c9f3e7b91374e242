/**
 * `npm run bench`: Inlet against the limits of this machine, in one run; with
 * BENCH_COMPARE, two builds of Inlet against each other (ab.ts).
 * Progress goes to stderr; the table and the targets to stdout; every figure
 * to bench/results/latest.json (or BENCH_OUT).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { abRun } from './ab.js';
import { spread } from './ab-summary.js';
import { type DestinationResult, RESULT_PREFIX, lagInput, parseDestinationResult } from './destination-result.js';
import { loadBenchConfig } from './config.js';
import { keylessFlood } from './keyless-flood.js';
import { PLAN_EVENTS, enforceBenchPlan, setBenchPlanMode } from './plan-workload.js';
import { type Checkout, Deployment, type Engine, type FreshStore, type LimitsMode, StoreFactory, checkoutAt, startDeployment } from './deploy.js';
import { type Row, SLO_LOAD, combineHalves, fill, fmt, paced, pacingNote, peak, short, tenantsRun } from './measure.js';
import { type BodyPool, type PoolSpec, REPEAT_SHARE, USERS, generatePool } from './payloads.js';
import { createScratchDatabase } from './pg-database.js';
import { machineBusyShare } from './proc-stats.js';
import { ROOT, benchScript, runJson, runText, startListening, stopProcess } from './processes.js';
import { type Section, httpRatio, table } from './report.js';
import type { StorageFigures } from './rows.js';
import { FULL_STORE_EVENTS, TARGETS, type TargetInput, type TargetResult, evaluate, targetLines } from './targets.js';

const cfg = loadBenchConfig(process.env, join(ROOT, 'bench', 'results', 'latest.json'));
const log = (line: string): void => void process.stderr.write(`${line}\n`);

const scratch = mkdtempSync(join(os.tmpdir(), 'inlet-bench-'));
process.once('exit', () => rmSync(scratch, { recursive: true, force: true }));

const startedAt = new Date();
const loadAtStart = os.loadavg();
const busyAtStart = await machineBusyShare();
log(`bench: ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), ${(busyAtStart * 100).toFixed(0)}% busy before the run, node ${process.version}`);
if (busyAtStart > 0.15) log('bench: something else is using the CPUs; figures will be noisy.');

// Timestamps are anchored to now (the batch API takes 7 days back at most); all else follows from the seeds.
const now = Date.now();
const w = cfg.workloads;
/** Phases with the bench plan enforced, each between two without it (`plan`). */
const PLAN_ROUNDS = Number(process.env.BENCH_PLAN_ROUNDS ?? 2);
const fullStore = cfg.compare === null ? cfg.stored > 0 : cfg.storedGiven && cfg.stored > 0;
const spec = (name: string, prefix: string, seed: number, bodies: number, itemsPerBody: number, gzip: boolean, spanMs?: number): PoolSpec => ({
  name, prefix, seed, bodies, itemsPerBody, gzip, now, ...(spanMs === undefined ? {} : { spanMs }),
});
const bigSpec = spec('big', 'b', 1, cfg.bigBodies, 500, false);
const t0 = performance.now();
// The tenants workload re-keys the big bodies per tenant (its character in place of the prefix), so it needs no pool of its own.
const pools = {
  big: generatePool(bigSpec),
  small: w.has('small') ? generatePool(spec('small', 's', 2, cfg.smallBodies, 1, false)) : null,
  gzip: w.has('gzip') ? generatePool(spec('gzip', 'g', 3, cfg.bigBodies, 500, true)) : null,
  // History for the full store: imported, spread over the week before now. Enough bodies that 64 rounds cover the fill.
  fill: fullStore ? generatePool(spec('fill', 'f', 5, Math.max(cfg.bigBodies, Math.ceil(cfg.stored / 500 / 0.95 / 60)), 500, false, 7 * 86_400_000)) : null,
};
const probePool = generatePool(spec('probe', 'p', 4, 2, 500, false));
log(`bench: generated the request bodies in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${describePool(pools.big)}`);

const A = checkoutAt('A', ROOT);
const stores = new StoreFactory(scratch, log);
const deployments: { name: string; engine: Engine; peakRssMiB: number; storedMax: number }[] = [];
/** The store each deployment runs on, for what a workload changes in it (the plan workload's plan). */
const storeOf = new Map<Deployment, FreshStore>();

if (cfg.compare !== null) {
  const B = checkoutAt('B', resolve(cfg.compare));
  try {
    const ab = await abRun({ cfg, log, A, B, stores, pools, probePool, fullStore });
    writeResult({ mode: 'compare', compare: { a: A.root, b: B.root, bCommit: gitCommit(B.root) }, ...ab });
  } finally {
    await stores.dropAll();
  }
  process.exit(0);
}

// The HTTP baseline listens for the whole run; it is measured around each of Inlet's closed-loop phases.
const httpServer = cfg.skipBaselines ? null : await startListening([benchScript('http-baseline.js')], process.env);
const http = httpServer === null ? null : new Deployment('http baseline', [httpServer], [{ key: 'none', projectId: '-', sourceId: '-' }], false, false);
if (http !== null) log("bench: HTTP baseline (read body, JSON.parse, 202) listening; measured half before and half after each of Inlet's closed-loop phases");
const sections: Section[] = [];
const notes: string[] = [];
/** The s3 workload's figures (destination.ts), for its targets. */
let destinations: DestinationResult | null = null;

try {
  await engineRun('sqlite', null);
  if (cfg.databaseUrl !== null) await engineRun('postgres', cfg.databaseUrl);
} finally {
  if (httpServer !== null) await stopProcess(httpServer.proc);
  await stores.dropAll();
}

const targets = checkTargets();
process.stdout.write(`\n${table(sections)}\n\n${targetLines(targets)}\n${notes.length > 0 ? `\n${notes.join('\n')}\n` : ''}`);
writeResult({ mode: 'measure', sections, deployments, targets, notes });
process.exit(0);

async function engineRun(engine: Engine, baseUrl: string | null): Promise<void> {
  log(`bench: Inlet on ${engine}`);
  const section: Section = { engine, http: [], storage: null, rows: [] };
  sections.push(section);
  if (!cfg.skipBaselines) section.storage = await storageBaseline(engine, baseUrl);
  const closed = (['big', 'small', 'gzip'] as const).filter((x) => w.has(x));
  const storedHere = fullStore && (engine === 'sqlite' || cfg.storedPg);
  if (fullStore && !storedHere) log(`bench: the ${short(cfg.stored)}-stored phases are skipped on PostgreSQL (BENCH_STORED_PG=1 runs them)`);

  if (closed.length > 0 || storedHere) {
    const d = await deploy(`inlet ${engine}`, A, engine, baseUrl, 1, 'off', 1, cfg.cpuProfDir);
    try {
      for (const name of closed) {
        const pool = pools[name]!;
        const conns = name === 'small' ? cfg.smallConnections : cfg.connections;
        const before = http === null ? null : await peak(http, pool, conns, cfg.seconds / 2, cfg.warmupSeconds, log);
        const row = await peak(d, pool, conns, cfg.seconds, cfg.warmupSeconds, log);
        section.rows.push(row);
        if (before !== null) {
          const after = await peak(http!, pool, conns, cfg.seconds / 2, cfg.warmupSeconds, log);
          section.http.push(combineHalves(before, after));
          const drift = before.eventsPerSec > 0 ? (after.eventsPerSec / before.eventsPerSec - 1) * 100 : 0;
          log(`  http baseline ${name}: ${fmt(before.eventsPerSec)} events/s before, ${fmt(after.eventsPerSec)} after (${drift >= 0 ? '+' : ''}${drift.toFixed(0)}%)`);
        }
        if (name === 'big') section.rows.push(await paced(d, pool, Math.max(1, row.requestsPerSec * SLO_LOAD), cfg.seconds, log));
      }
      if (w.has('plan')) {
        // Phases with the plan enforced alternate with phases without it on the same server, each plan phase
        // compared with the mean of the phases either side of it: a drift of the machine or of the store falls on both.
        const store = storeOf.get(d)!;
        await enforceBenchPlan(A, store, scratch, log);
        let before = section.rows.find((r) => r.workload === 'big')!;
        for (let round = 1; round <= PLAN_ROUNDS; round++) {
          if (round > 1) await setBenchPlanMode(A, store, 'enforce');
          const withPlan = await peak(d, pools.big, cfg.connections, cfg.seconds, cfg.warmupSeconds, log, { workload: 'big_plan', label: `big, a ${PLAN_EVENTS}-event plan enforced` });
          await setBenchPlanMode(A, store, 'off');
          const after = await peak(d, pools.big, cfg.connections, cfg.seconds, cfg.warmupSeconds, log, { workload: 'big_plan_off', label: 'big, the plan off again' });
          section.rows.push(withPlan, after);
          const rate = (withPlan.eventsPerSec * 2) / (before.eventsPerSec + after.eventsPerSec);
          const cpu = withPlan.serverUsPerEvent - (before.serverUsPerEvent + after.serverUsPerEvent) / 2;
          const line = `plan round ${round}: ${rate.toFixed(3)}x the events/s without it (mean of the phases either side), ${cpu >= 0 ? '+' : ''}${cpu.toFixed(2)} µs of server CPU per event`;
          notes.push(`${engine} ${line}`);
          log(`  ${line}`);
          before = after;
        }
      }
      if (w.has('keyless') && engine === 'sqlite') {
        // The keyed batches again, while clients with no key send 1 MB bodies that must be parsed to find one.
        const flood = keylessFlood(d.urls[0]!, 8);
        const row = await peak(d, pools.big, cfg.connections, cfg.seconds, cfg.warmupSeconds, log, { workload: 'big_keyless_flood', label: 'big beside a keyless flood' });
        const sent = await flood.stop();
        section.rows.push(row);
        log(`  keyless flood: ${fmt(sent.requests)} requests, by status ${JSON.stringify(sent.byStatus)}`);
      }
      if (storedHere) {
        const f = await fill(d, pools.fill!, cfg.stored, cfg.fillConnections, log);
        if (f !== null) section.rows.push(f);
        const label = `${short(cfg.stored)} stored`;
        const full = await peak(d, pools.big, cfg.connections, cfg.seconds, cfg.warmupSeconds, log, { workload: 'big_full', label: `big, ${label}` });
        section.rows.push(full);
        const rate = Math.max(1, full.requestsPerSec * SLO_LOAD);
        section.rows.push(await paced(d, pools.big, rate, cfg.seconds, log, { workload: 'big_full_at_80', label: `big @${rate.toFixed(0)}/s, ${label}` }));
      }
    } finally {
      await retire(d, engine);
    }
    if (storedHere) {
      // The fresh-store figure again, right after the full-store phases: the ratio then rests on fresh phases on both sides of the full one.
      const again = await deploy(`inlet ${engine}`, A, engine, baseUrl, 1, 'off', 1, null);
      try {
        section.rows.push(await peak(again, pools.big, cfg.connections, cfg.seconds, cfg.warmupSeconds, log, { workload: 'big_fresh_after', label: 'big, fresh store again' }));
      } finally {
        await retire(again, engine);
      }
    }
  }

  if (w.has('s3') && engine === 'sqlite') {
    // Its own servers, one at a time, once this engine's deployment has stopped: a webhook and an s3 destination beside big, against none.
    log('  s3: big with a webhook and an s3 destination attached, against none (bench/destination.ts)');
    const out = await runText([benchScript('destination.js')], { ...process.env, DEST_KINDS: 'webhook,s3', DEST_ROUNDS: '1', DEST_RATE: '', BENCH_SECONDS: String(cfg.seconds) });
    destinations = parseDestinationResult(out);
    for (const line of out.trim().split('\n')) if (!line.startsWith(RESULT_PREFIX)) notes.push(`sqlite s3: ${line}`);
  }

  if (w.has('tenants')) {
    const servers = engine === 'postgres' ? 2 : 1;
    if (servers > 1 && !(await redisAnswers(cfg.redisUrl))) {
      notes.push(`${engine} tenants: not run, no Redis answered at ${cfg.redisUrl} (BENCH_REDIS_URL) for the two servers' shared limits`);
      log(`bench: ${notes.at(-1)}`);
      return;
    }
    // Raised limits: counted as the defaults are, never near, so the row is the server's speed and not the load generator's pacing.
    const t = await deploy(`inlet ${engine}`, A, engine, baseUrl, servers, 'raised', cfg.tenants, cfg.cpuProfDir);
    try {
      const row = await tenantsRun(t, pools.big, tenantsOptions(), log);
      section.rows.push(row);
      const pacing = pacingNote(row);
      if (pacing !== null) notes.push(`${engine} ${row.label}: ${pacing}`);
    } finally {
      const redisDown = t.servers.some((s) => s.stderr().includes('Redis unavailable'));
      if (redisDown) notes.push(`${engine} tenants: a server lost Redis during the run, so the two servers counted their limits apart`);
      await retire(t, engine);
    }
  }
}

function tenantsOptions() {
  return { probeItems: 2 * probePool.itemsPerBody, connections: cfg.connections, seconds: cfg.seconds, warmupSeconds: cfg.warmupSeconds, usersPerTenant: cfg.tenantUsers };
}

async function deploy(name: string, checkout: Checkout, engine: Engine, baseUrl: string | null, servers: number, limits: LimitsMode, tenants: number, prof: string | null) {
  const store = await stores.fresh(checkout, engine, baseUrl, tenants);
  const d = await startDeployment(
    { name, checkout, store, servers, limits, probe: probePool, cpuProfDir: prof, ...(servers > 1 ? { redisUrl: cfg.redisUrl } : {}) },
    log,
  );
  storeOf.set(d, store);
  return d;
}

async function retire(d: Deployment, engine: Engine): Promise<void> {
  await d.stop(log);
  deployments.push({ name: d.name, engine, peakRssMiB: d.lifetimePeakRssMiB(), storedMax: d.stored });
}

async function storageBaseline(engine: Engine, baseUrl: string | null): Promise<StorageFigures> {
  if (engine === 'sqlite') {
    log('bench: SQLite storage baseline (plain SQL: WAL, synchronous=FULL, one unique key, 500 rows per transaction, one connection)');
    const dir = mkdtempSync(join(scratch, 'sqlite-baseline-'));
    try {
      const f = await runJson<StorageFigures>([benchScript('sqlite-baseline.js'), '--spec', JSON.stringify(bigSpec), '--seconds', String(cfg.seconds), '--dir', dir], process.env);
      log(`  sqlite storage: ${fmt(f.rowsPerSec)} rows/s, ${((f.cpuSec / f.rows) * 1e6).toFixed(1)} µs CPU per row (${settings(f)})`);
      return f;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  log(`bench: PostgreSQL storage baseline (plain SQL: unnest bulk insert, one unique key, 500 rows per transaction, ${cfg.pgWriters} connections)`);
  const db = await createScratchDatabase(baseUrl!, 'base');
  try {
    const f = await runJson<StorageFigures>(
      [benchScript('pg-baseline.js'), '--spec', JSON.stringify(bigSpec), '--seconds', String(cfg.seconds), '--url', db.url, '--writers', String(cfg.pgWriters)],
      process.env,
    );
    const dbCpu = f.dbCpuSec === null ? '' : `, PostgreSQL ${((f.dbCpuSec / f.rows) * 1e6).toFixed(1)} µs CPU per row`;
    log(`  postgres storage: ${fmt(f.rowsPerSec)} rows/s, writers ${((f.cpuSec / f.rows) * 1e6).toFixed(1)} µs CPU per row${dbCpu} (${settings(f)})`);
    return f;
  } finally {
    await db.drop().catch((e) => log(`bench: could not drop database ${db.name}: ${(e as Error).message}`));
  }
}

function settings(f: StorageFigures): string {
  return Object.entries(f.durability)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
}

/** Whether a Redis answers PING at the URL, within a second. */
function redisAnswers(url: string): Promise<boolean> {
  return new Promise((done) => {
    const u = new URL(url);
    const sock = connect({ host: u.hostname, port: Number(u.port || 6379) });
    const finish = (ok: boolean): void => {
      sock.destroy();
      done(ok);
    };
    sock.setTimeout(1000, () => finish(false));
    sock.on('error', () => finish(false));
    sock.on('connect', () => sock.write('PING\r\n'));
    // A Redis that wants a password answers -NOAUTH; the servers have the URL's password, so that counts as there.
    sock.on('data', (d) => finish(/^(\+PONG|-NOAUTH)/.test(d.toString())));
  });
}

function checkTargets(): TargetResult[] {
  const sq = sections.find((s) => s.engine === 'sqlite');
  const pg = sections.find((s) => s.engine === 'postgres');
  const row = (s: Section | undefined, workload: string): Row | undefined => s?.rows.find((r) => r.workload === workload);
  const from = (value: number | null | undefined, missing: string): TargetInput => (value === null || value === undefined ? { value: null, missing } : { value });
  const big = row(sq, 'big');
  const small = row(sq, 'small');
  const full = row(sq, 'big_full');
  const fullPaced = row(sq, 'big_full_at_80');
  const fresh = [big, row(sq, 'big_fresh_after')].filter((r) => r !== undefined);
  const fullEnough = full !== undefined && full.storedAtStart >= FULL_STORE_EVENTS;
  const fewer = full === undefined ? 'no full-store phase (BENCH_STORED=0)' : `${short(full.storedAtStart)} stored, not ${short(FULL_STORE_EVENTS)}`;
  const withFull = (input: TargetInput): TargetInput => (input.value === null || fullEnough ? input : { ...input, partial: fewer });
  const noBaseline = cfg.skipBaselines ? 'baselines skipped' : 'not run';
  const pgTenants = row(pg, 'tenants');
  const pgStorage = pg?.storage ?? null;
  const rss = deployments.length === 0 ? null : Math.max(...deployments.map((d) => d.peakRssMiB));
  const rssFull = deployments.some((d) => d.storedMax >= FULL_STORE_EVENTS);
  const pgInput = ((): TargetInput => {
    if (cfg.databaseUrl === null) return { value: null, missing: 'no INLET_DATABASE_URL' };
    if (pgTenants === undefined || pgStorage === null) return { value: null, missing: pgTenants === undefined ? 'tenants not run' : noBaseline };
    const value = pgTenants.eventsPerSec / pgStorage.rowsPerSec;
    if (pgTenants.rateLimited > 0) return { value, partial: `${pgTenants.rateLimited} answers were 429: not within the limits` };
    const pacing = pacingNote(pgTenants);
    return pacing === null ? { value } : { value, partial: pacing };
  })();
  return [
    evaluate(TARGETS.cpuBig, from(big?.serverUsPerEvent, 'big not run')),
    evaluate(TARGETS.bigHttp, from(big === undefined ? null : httpRatio(sq!, big), big === undefined ? 'big not run' : noBaseline)),
    evaluate(TARGETS.smallHttp, from(small === undefined ? null : httpRatio(sq!, small), small === undefined ? 'small not run' : noBaseline)),
    evaluate(TARGETS.p99Fresh, from(row(sq, 'big_at_80')?.p99Ms, 'big not run')),
    evaluate(TARGETS.p99Full, withFull(from(fullPaced?.p99Ms, 'no full-store phase (BENCH_STORED=0)'))),
    evaluate(
      TARGETS.fullFresh,
      withFull(from(full === undefined || fresh.length === 0 ? null : full.eventsPerSec / (fresh.reduce((n, r) => n + r.eventsPerSec, 0) / fresh.length), 'no full-store phase (BENCH_STORED=0)')),
    ),
    evaluate(TARGETS.pgTenants, pgInput),
    evaluate(
      TARGETS.keylessFlood,
      from(big === undefined || row(sq, 'big_keyless_flood') === undefined ? null : row(sq, 'big_keyless_flood')!.eventsPerSec / big.eventsPerSec, 'big or keyless not run'),
    ),
    evaluate(TARGETS.s3Ratio, from(destinations === null ? null : spread(destinations.ratios)?.median, 's3 not run')),
    evaluate(TARGETS.s3Lag, lagInput(destinations)),
    evaluate(TARGETS.peakRss, rss === null ? { value: null, missing: 'no server ran' } : rssFull ? { value: rss } : { value: rss, partial: `no server held ${short(FULL_STORE_EVENTS)} events`, failureStands: true }),
  ];
}

function writeResult(body: Record<string, unknown>): void {
  const result = {
    startedAt: startedAt.toISOString(),
    seconds: (Date.now() - startedAt.getTime()) / 1000,
    machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? null, memoryMiB: Math.round(os.totalmem() / 1048576), busyAtStart, loadAtStart, loadAtEnd: os.loadavg(), node: process.version },
    commit: gitCommit(ROOT),
    config: { ...cfg, workloads: [...cfg.workloads], databaseUrl: cfg.databaseUrl === null ? null : '(set)', redisUrl: '(set)' },
    payload: { users: USERS, repeatShare: REPEAT_SHARE, pools: Object.fromEntries(Object.entries(pools).flatMap(([k, p]) => (p === null ? [] : [[k, poolSummary(p)]]))) },
    ...body,
  };
  mkdirSync(dirname(cfg.out), { recursive: true });
  writeFileSync(cfg.out, `${JSON.stringify(result, null, 2)}\n`);
  log(`\nbench: wrote ${cfg.out} (${result.seconds.toFixed(0)} s in all)`);
}

function describePool(p: BodyPool): string {
  const s = poolSummary(p);
  return `big bodies ${fmt(s.meanBodyBytes)} B (${s.meanItemBytes.toFixed(0)} B per item), ${(s.repeatShare * 100).toFixed(1)}% repeats, ${(s.identifyShare * 100).toFixed(1)}% identify, ${(s.userAgentShare * 100).toFixed(1)}% with $user_agent`;
}

function poolSummary(p: BodyPool) {
  const wire = p.wire.reduce((n, b) => n + b.length, 0);
  return {
    bodies: p.raw.length,
    itemsPerBody: p.itemsPerBody,
    gzip: p.gzip,
    meanItemBytes: p.jsonBytes / p.items,
    meanBodyBytes: p.raw.reduce((n, b) => n + b.length, 0) / p.raw.length,
    meanWireBytes: wire / p.raw.length,
    repeatShare: p.repeats / p.items,
    identifyShare: p.identifies / (p.items - p.repeats),
    userAgentShare: p.userAgents / (p.items - p.repeats),
  };
}

function gitCommit(root: string): string | null {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}
