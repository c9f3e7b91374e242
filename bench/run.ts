/**
 * `npm run bench`: Inlet against the limits of this machine, in one run.
 * Progress goes to stderr; the table and the targets to stdout; every figure
 * to bench/results/latest.json (or BENCH_OUT).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { type WorkloadName, loadBenchConfig } from './config.js';
import { batchHeaders } from './load.js';
import { type SystemRun, fmt, measureSystem } from './measure.js';
import { type BodyPool, type PoolSpec, REPEAT_SHARE, USERS, generatePool } from './payloads.js';
import { createScratchDatabase } from './pg-database.js';
import { INLET_BIN, type Provisioned, benchScript, provision, runJson, startListening, stopProcess } from './processes.js';
import { machineBusyShare } from './proc-stats.js';
import { type StoreResult, type TargetResult, checkTargets, ratiosOf, table, targetLines } from './report.js';
import type { StorageFigures } from './rows.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const cfg = loadBenchConfig(process.env, join(ROOT, 'bench', 'results', 'latest.json'));
const log = (line: string): void => void process.stderr.write(`${line}\n`);

const scratch = mkdtempSync(join(os.tmpdir(), 'inlet-bench-'));
process.once('exit', () => rmSync(scratch, { recursive: true, force: true }));

const startedAt = new Date();
const loadAtStart = os.loadavg();
const busyAtStart = await machineBusyShare();
log(`bench: ${os.cpus().length} CPUs (${os.cpus()[0]?.model ?? '?'}), ${(busyAtStart * 100).toFixed(0)}% busy before the run, node ${process.version}`);
if (busyAtStart > 0.15) log('bench: something else is using the CPUs; figures will be noisy.');

// Timestamps are anchored to now (the API takes 7 days back at most); all else follows from the seeds.
const now = Date.now();
const specs: Record<WorkloadName | 'probe', PoolSpec> = {
  big: { name: 'big', prefix: 'b', seed: 1, bodies: cfg.bigBodies, itemsPerBody: 500, gzip: false, now },
  small: { name: 'small', prefix: 's', seed: 2, bodies: cfg.smallBodies, itemsPerBody: 1, gzip: false, now },
  gzip: { name: 'gzip', prefix: 'g', seed: 3, bodies: cfg.bigBodies, itemsPerBody: 500, gzip: true, now },
  probe: { name: 'probe', prefix: 'p', seed: 4, bodies: 2, itemsPerBody: 500, gzip: false, now },
};
const t0 = performance.now();
const pools = { big: generatePool(specs.big), small: generatePool(specs.small), gzip: generatePool(specs.gzip) };
const probePool = generatePool(specs.probe);
log(`bench: generated ${fmt(pools.big.items + pools.small.items + pools.gzip.items)} items in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${describePool(pools.big)}`);

// The HTTP baseline listens for the whole run; it is measured around each of Inlet's phases (measure.ts).
const http = cfg.skipBaselines ? null : await startListening([benchScript('http-baseline.js')], process.env);
if (http !== null) log(`bench: HTTP baseline (read body, JSON.parse, 202) listening; measured half before and half after each of Inlet's phases`);
const storage: StorageFigures[] = [];
const stores: Record<string, StoreResult> = {};
const stored: Record<string, number | null> = {};

try {
  if (!cfg.skipBaselines) storage.push(await sqliteBaseline());
  {
    const run = await inletRun('sqlite', null);
    const sqliteStorage = storage.find((s) => s.engine === 'sqlite') ?? null;
    stores.sqlite = { run: run.run, http: run.http, storage: sqliteStorage, ratios: ratiosOf(run.run, run.http, sqliteStorage) };
    stored.sqlite = run.storedEvents;
  }
  if (cfg.databaseUrl !== null) {
    const baseDb = await createScratchDatabase(cfg.databaseUrl, 'base');
    const inletDb = await createScratchDatabase(cfg.databaseUrl, 'inlet');
    try {
      const pgStorage = cfg.skipBaselines ? null : await pgBaseline(baseDb.url);
      if (pgStorage !== null) storage.push(pgStorage);
      const run = await inletRun('postgres', inletDb.url);
      stores.postgres = { run: run.run, http: run.http, storage: pgStorage, ratios: ratiosOf(run.run, run.http, pgStorage) };
      stored.postgres = run.storedEvents;
    } finally {
      await baseDb.drop().catch((e) => log(`bench: could not drop database ${baseDb.name}: ${(e as Error).message}`));
      await inletDb.drop().catch((e) => log(`bench: could not drop database ${inletDb.name}: ${(e as Error).message}`));
    }
  }
} finally {
  if (http !== null) await stopProcess(http.proc);
}
const targets: TargetResult[] = Object.entries(stores).flatMap(([name, r]) => checkTargets(name, r));
process.stdout.write(`\n${table(stores)}\n\n${targetLines(targets)}\n`);
const result = {
  startedAt: startedAt.toISOString(),
  seconds: (Date.now() - startedAt.getTime()) / 1000,
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model ?? null, memoryMiB: Math.round(os.totalmem() / 1048576), busyAtStart, loadAtStart, loadAtEnd: os.loadavg(), node: process.version },
  commit: gitCommit(),
  config: { ...cfg, workloads: [...cfg.workloads], databaseUrl: cfg.databaseUrl === null ? null : '(set)' },
  payload: {
    users: USERS,
    repeatShare: REPEAT_SHARE,
    pools: Object.fromEntries(Object.entries(pools).map(([k, p]) => [k, poolSummary(p)])),
  },
  baselines: { http: Object.fromEntries(Object.entries(stores).map(([k, r]) => [k, r.http])), storage },
  stores: Object.fromEntries(Object.entries(stores).map(([k, r]) => [k, { ...r.run, ratios: r.ratios, storedTrackEvents: stored[k] }])),
  targets,
};
mkdirSync(dirname(cfg.out), { recursive: true });
writeFileSync(cfg.out, `${JSON.stringify(result, null, 2)}\n`);
log(`\nbench: wrote ${cfg.out} (${result.seconds.toFixed(0)} s in all)`);
process.exit(0);

async function sqliteBaseline(): Promise<StorageFigures> {
  log("bench: SQLite storage baseline (Inlet's schema, WAL, synchronous=FULL, 500 rows per transaction)");
  const dir = mkdtempSync(join(scratch, 'sqlite-baseline-'));
  const f = await runJson<StorageFigures>([benchScript('sqlite-baseline.js'), '--spec', JSON.stringify(specs.big), '--seconds', String(cfg.seconds), '--dir', dir], process.env);
  log(`  sqlite storage: ${fmt(f.rowsPerSec)} rows/s`);
  rmSync(dir, { recursive: true, force: true });
  return f;
}

async function pgBaseline(url: string): Promise<StorageFigures> {
  log(`bench: PostgreSQL storage baseline (unnest bulk insert, 500 rows per transaction, ${cfg.pgWriters} writers)`);
  const f = await runJson<StorageFigures>(
    [benchScript('pg-baseline.js'), '--spec', JSON.stringify(specs.big), '--seconds', String(cfg.seconds), '--url', url, '--writers', String(cfg.pgWriters)],
    process.env,
  );
  log(`  postgres storage: ${fmt(f.rowsPerSec)} rows/s`);
  return f;
}

async function inletRun(store: 'sqlite' | 'postgres', databaseUrl: string | null): Promise<{ run: SystemRun; http: SystemRun | null; storedEvents: number | null }> {
  log(`bench: Inlet on ${store}`);
  const dataDir = mkdtempSync(join(scratch, `inlet-${store}-`));
  const env = inletEnv(databaseUrl);
  const ids = await provision(env, dataDir);
  const prof = cfg.cpuProfDir === null ? [] : ['--cpu-prof', '--cpu-prof-dir', cfg.cpuProfDir];
  const server = await startListening([...prof, INLET_BIN, 'serve', '--port', '0', '--data-dir', dataDir], env);
  let measured: { run: SystemRun; baseline: SystemRun | null };
  try {
    await probe(server.url, ids, probePool);
    const baseline = http === null ? undefined : { system: 'http baseline', target: { url: http.url, key: 'none' }, pid: http.pid };
    measured = await measureSystem(`inlet ${store}`, { url: server.url, key: ids.key }, server.pid, pools, cfg, { withSlo: true, stores: true, baseline }, log);
  } finally {
    const code = await stopProcess(server.proc);
    if (code !== 0) log(`bench: inlet serve exited ${code}`);
    const err = server.stderr().trim();
    if (err !== '') log(`bench: inlet serve said on stderr:\n${err.split('\n').slice(-10).join('\n')}`);
  }
  const usage = await runJson<{ events: number }>([INLET_BIN, 'usage', '--project', ids.projectId, '--data-dir', dataDir, '--json'], env).catch(() => null);
  return { run: measured.run, http: measured.baseline, storedEvents: usage?.events ?? null };
}

/** Limits off, quiet logs, and only the store this run is about. */
function inletEnv(databaseUrl: string | null): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, INLET_LIMIT_BURST: '0', INLET_LIMIT_SUSTAINED: '0', INLET_LIMIT_KEY_RPS: '0', INLET_LOG_LEVEL: 'warn', INLET_METRICS_PORT: '0' };
  for (const k of ['INLET_REDIS_URL', 'INLET_DATA_DIR', 'INLET_PORT', 'INLET_HOST', 'INLET_DATABASE_URL']) delete env[k];
  if (databaseUrl !== null) env.INLET_DATABASE_URL = databaseUrl;
  return env;
}

/**
 * Fails the run unless Inlet accepts every generated item, plain and gzipped:
 * a generator that drifted from the API would otherwise be measured as
 * refusals, which are cheaper than writes.
 */
async function probe(url: string, ids: Provisioned, pool: BodyPool): Promise<void> {
  for (const [i, gzip] of [[0, false], [1, true]] as const) {
    const raw = pool.raw[i]!;
    const res = await fetch(new URL('/api/v1/batch', url), { method: 'POST', headers: batchHeaders(ids.key, gzip), body: new Uint8Array(gzip ? gzipSync(raw) : raw) });
    const text = await res.text();
    const a = JSON.parse(text) as { accepted?: number; errors?: unknown[]; dropped?: unknown[] };
    if (res.status !== 202 || a.accepted !== pool.itemsPerBody || (a.errors?.length ?? 1) > 0 || (a.dropped?.length ?? 1) > 0) {
      throw new Error(`Inlet did not accept every generated item (${res.status}); fix bench/payloads.ts: ${text.slice(0, 2000)}`);
    }
  }
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

function gitCommit(): string | null {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}
