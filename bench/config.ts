/** What a run can be told through the environment. */
export interface BenchConfig {
  /** Measured seconds per workload. */
  seconds: number;
  /** Unmeasured seconds before each workload, so the JIT and caches are warm. */
  warmupSeconds: number;
  /** Connections for the big and gzip batches. */
  connections: number;
  /** Connections for one-item requests: the most requests one commit can carry. */
  smallConnections: number;
  /** Bodies generated per pool; past them a pool is re-sent with new insert_ids. */
  bigBodies: number;
  smallBodies: number;
  workloads: Set<WorkloadName>;
  databaseUrl: string | null;
  pgWriters: number;
  /** When set, Inlet runs under --cpu-prof and writes its profile here. */
  cpuProfDir: string | null;
  skipBaselines: boolean;
  out: string;
}

export const WORKLOADS = ['big', 'small', 'gzip'] as const;
export type WorkloadName = (typeof WORKLOADS)[number];

type Env = Record<string, string | undefined>;

export function loadBenchConfig(env: Env, defaultOut: string): BenchConfig {
  const workloads = (env.BENCH_WORKLOADS ?? WORKLOADS.join(',')).split(',').map((w) => w.trim()).filter((w) => w !== '');
  for (const w of workloads) {
    if (!(WORKLOADS as readonly string[]).includes(w)) throw new Error(`BENCH_WORKLOADS: unknown workload "${w}"; known: ${WORKLOADS.join(', ')}.`);
  }
  const url = env.INLET_DATABASE_URL?.trim();
  return {
    seconds: positive(env, 'BENCH_SECONDS', 10),
    warmupSeconds: positive(env, 'BENCH_WARMUP_SECONDS', 2, true),
    connections: positive(env, 'BENCH_CONNECTIONS', 8),
    smallConnections: positive(env, 'BENCH_SMALL_CONNECTIONS', 32),
    bigBodies: positive(env, 'BENCH_BIG_BODIES', 400),
    smallBodies: positive(env, 'BENCH_SMALL_BODIES', 20_000),
    workloads: new Set(workloads as WorkloadName[]),
    databaseUrl: url ? url : null,
    pgWriters: positive(env, 'BENCH_PG_WRITERS', 4),
    cpuProfDir: env.BENCH_CPU_PROF?.trim() || null,
    skipBaselines: env.BENCH_SKIP_BASELINES === '1',
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
