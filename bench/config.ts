import { defaultUsersPerTenant } from './tenants.js';

/** What a run can be told through the environment. */
export interface BenchConfig {
  /** Measured seconds per workload. */
  seconds: number;
  /** Unmeasured seconds before each workload, so the JIT and caches are warm. */
  warmupSeconds: number;
  /** Connections for the big, gzip and tenants batches. */
  connections: number;
  /** Connections for one-item requests: the most requests one commit can carry. */
  smallConnections: number;
  /** Bodies generated per pool; past them a pool is re-sent with new insert_ids. */
  bigBodies: number;
  smallBodies: number;
  workloads: Set<WorkloadName>;
  /** Projects of the tenants workload, each with its own source and key. */
  tenants: number;
  /** Distinct users of each tenants project (by default, the big workload's users shared out among them). */
  tenantUsers: number;
  /** Events the store is filled to before the full-store phases; 0 skips them. */
  stored: number;
  /** Whether BENCH_STORED was given (an A/B run fills only when asked). */
  storedGiven: boolean;
  /** The full-store phases on PostgreSQL too. */
  storedPg: boolean;
  /** Connections that fill the store. */
  fillConnections: number;
  databaseUrl: string | null;
  /** The Redis the two PostgreSQL servers count their limits in. */
  redisUrl: string;
  pgWriters: number;
  /** When set, Inlet runs under --cpu-prof and writes its profile here. */
  cpuProfDir: string | null;
  skipBaselines: boolean;
  /** A/B mode: the other checkout (B), and how many rounds. */
  compare: string | null;
  rounds: number;
  /** A/B mode: the closed-loop peaks taken in alternating slices of this many seconds; 0, one phase per side. */
  sliceSeconds: number;
  out: string;
}

/** s3: big with a webhook and an s3 destination attached against none (destination.ts, one round, on SQLite). */
export const WORKLOADS = ['big', 'small', 'gzip', 'tenants', 'keyless', 's3', 'plan'] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

type Env = Record<string, string | undefined>;

export function loadBenchConfig(env: Env, defaultOut: string): BenchConfig {
  const workloads = (env.BENCH_WORKLOADS ?? WORKLOADS.join(',')).split(',').map((w) => w.trim()).filter((w) => w !== '');
  for (const w of workloads) {
    if (!(WORKLOADS as readonly string[]).includes(w)) throw new Error(`BENCH_WORKLOADS: unknown workload "${w}"; known: ${WORKLOADS.join(', ')}.`);
  }
  const url = env.INLET_DATABASE_URL?.trim();
  const tenants = positive(env, 'BENCH_TENANTS', 64);
  if (!Number.isInteger(tenants) || tenants > 64) throw new Error(`BENCH_TENANTS must be a whole number from 1 to 64, not "${env.BENCH_TENANTS}".`);
  const tenantUsers = positive(env, 'BENCH_TENANT_USERS', defaultUsersPerTenant(tenants));
  if (!Number.isInteger(tenantUsers)) throw new Error(`BENCH_TENANT_USERS must be a whole number, not "${env.BENCH_TENANT_USERS}".`);
  return {
    seconds: positive(env, 'BENCH_SECONDS', 10),
    warmupSeconds: positive(env, 'BENCH_WARMUP_SECONDS', 2, true),
    connections: positive(env, 'BENCH_CONNECTIONS', 8),
    smallConnections: positive(env, 'BENCH_SMALL_CONNECTIONS', 32),
    bigBodies: positive(env, 'BENCH_BIG_BODIES', 400),
    smallBodies: positive(env, 'BENCH_SMALL_BODIES', 20_000),
    workloads: new Set(workloads as WorkloadName[]),
    tenants,
    tenantUsers,
    stored: positive(env, 'BENCH_STORED', 5_000_000, true),
    storedGiven: (env.BENCH_STORED ?? '').trim() !== '',
    storedPg: env.BENCH_STORED_PG === '1',
    fillConnections: positive(env, 'BENCH_FILL_CONNECTIONS', 16),
    databaseUrl: url ? url : null,
    redisUrl: env.BENCH_REDIS_URL?.trim() || env.INLET_REDIS_URL?.trim() || 'redis://127.0.0.1:6379',
    pgWriters: positive(env, 'BENCH_PG_WRITERS', 4),
    cpuProfDir: env.BENCH_CPU_PROF?.trim() || null,
    skipBaselines: env.BENCH_SKIP_BASELINES === '1',
    compare: env.BENCH_COMPARE?.trim() || null,
    rounds: positive(env, 'BENCH_ROUNDS', 3),
    // Sliced by default in an A/B run: an A/A run's spread was four to five times narrower (bench/README.md).
    sliceSeconds: positive(env, 'BENCH_SLICE_SECONDS', (env.BENCH_COMPARE?.trim() ?? '') !== '' ? 1 : 0, true),
    out: env.BENCH_OUT?.trim() || defaultOut,
  };
}

function positive(env: Env, name: string, fallback: number, zeroOk = false): number {
  const v = env[name];
  if (v === undefined || v.trim() === '') return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0 || (n === 0 && !zeroOk)) throw new Error(`${name} must be a ${zeroOk ? 'non-negative' : 'positive'} number, not "${v}".`);
  return n;
}
