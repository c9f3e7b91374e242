import { cpSync, existsSync, mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { type LimitWindow, parseRateLimitPolicy } from './budget.js';
import { batchHeaders } from './load.js';
import { BodyCursor, type BodyPool } from './payloads.js';
import { type ScratchDatabase, createScratchDatabase } from './pg-database.js';
import { RssWatch } from './proc-stats.js';
import { type Listening, benchScript, runJson, startListening, stopProcess } from './processes.js';
import type { Tenant } from './tenants.js';

export type Log = (line: string) => void;
export type Engine = 'sqlite' | 'postgres';

/** A checkout of Inlet with dist/ built: the one measured, or the other side of an A/B run. */
export interface Checkout {
  label: string;
  root: string;
  bin: string;
}

export function checkoutAt(label: string, root: string): Checkout {
  for (const need of ['dist/cli/main.js', 'bin/inlet', 'node_modules']) {
    if (!existsSync(join(root, need))) throw new Error(`${root}: no ${need}; a checkout to measure needs dist/ built (npm run build) and node_modules.`);
  }
  return { label, root, bin: join(root, 'bin', 'inlet') };
}

/** A store ready for a server: a data directory (SQLite) or a database (PostgreSQL), already provisioned. */
export interface FreshStore {
  dataDir: string;
  databaseUrl: string | null;
  tenants: Tenant[];
  drop: () => Promise<void>;
}

/**
 * Fresh stores, provisioned through each checkout's own `inlet` command.
 * Provisioning 64 projects costs seconds, so it happens once per checkout and
 * tenant count, into a template; each fresh store is a copy of it (the data
 * directory copied, or CREATE DATABASE … TEMPLATE), with the same ids and
 * keys.
 */
export class StoreFactory {
  private readonly templates = new Map<string, { dataDir: string; db: ScratchDatabase | null; tenants: Tenant[] }>();
  private readonly databases = new Set<ScratchDatabase>();
  private n = 0;

  constructor(
    private readonly scratch: string,
    private readonly log: Log,
  ) {}

  async fresh(checkout: Checkout, engine: Engine, baseUrl: string | null, tenants: number): Promise<FreshStore> {
    const t = await this.template(checkout, engine, baseUrl, tenants);
    return this.copy({ dataDir: t.dataDir, database: t.db?.name ?? null, tenants: t.tenants }, checkout.label, baseUrl);
  }

  /**
   * A new store holding what `store` holds now; its servers must be stopped
   * (CREATE DATABASE … TEMPLATE needs no one connected).
   */
  copyOf(store: FreshStore, label: string, baseUrl: string | null): Promise<FreshStore> {
    const database = store.databaseUrl === null ? null : decodeURIComponent(new URL(store.databaseUrl).pathname.slice(1));
    return this.copy({ dataDir: store.dataDir, database, tenants: store.tenants }, label, baseUrl);
  }

  /** The data directory copied (SQLite), or a database made from `database` as its template. */
  private async copy(from: { dataDir: string; database: string | null; tenants: Tenant[] }, label: string, baseUrl: string | null): Promise<FreshStore> {
    const dataDir = join(this.scratch, `store-${label}-${++this.n}`);
    if (from.database === null) {
      cpSync(from.dataDir, dataDir, { recursive: true });
      return { dataDir, databaseUrl: null, tenants: from.tenants, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
    }
    mkdirSync(dataDir, { recursive: true });
    const db = await createScratchDatabase(baseUrl!, label.toLowerCase(), from.database);
    this.databases.add(db);
    return {
      dataDir,
      databaseUrl: db.url,
      tenants: from.tenants,
      drop: async () => {
        this.databases.delete(db);
        rmSync(dataDir, { recursive: true, force: true });
        await db.drop();
      },
    };
  }

  /** Drops every database still held (templates included). */
  async dropAll(): Promise<void> {
    const all = [...this.databases, ...[...this.templates.values()].flatMap((t) => (t.db === null ? [] : [t.db]))];
    this.databases.clear();
    this.templates.clear();
    for (const db of all) await db.drop().catch((e) => this.log(`bench: could not drop database ${db.name}: ${(e as Error).message}`));
  }

  private async template(checkout: Checkout, engine: Engine, baseUrl: string | null, tenants: number) {
    const id = `${checkout.root}|${engine}|${tenants}`;
    const known = this.templates.get(id);
    if (known !== undefined) return known;
    const dataDir = join(this.scratch, `template-${checkout.label}-${engine}-${tenants}`);
    mkdirSync(dataDir, { recursive: true });
    const db = engine === 'postgres' ? await createScratchDatabase(baseUrl!, `tpl_${checkout.label.toLowerCase()}`) : null;
    const t0 = performance.now();
    const env = serverEnv({ limits: 'default', databaseUrl: db?.url ?? null });
    const made = await runJson<{ tenants: Tenant[]; inProcess: boolean }>(
      [benchScript('provision-batch.js'), '--checkout', checkout.root, '--data-dir', dataDir, '--tenants', String(tenants)],
      env,
    );
    this.log(
      `bench: provisioned ${tenants} project${tenants === 1 ? '' : 's'} with ${checkout.label}'s inlet command (${made.inProcess ? 'in one process' : 'one process per command'}) in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
    );
    const t = { dataDir, db, tenants: made.tenants };
    this.templates.set(id, t);
    return t;
  }
}

/**
 * How a deployment's rate limits are set: off (each INLET_LIMIT_* at 0), the
 * defaults (none set), or raised: counted as with the defaults (in Redis for
 * two servers), but so high that no load of this machine comes near them, so
 * the load generator never holds a request back to stay within them.
 */
export type LimitsMode = 'off' | 'default' | 'raised';

/** The limits of a `raised` deployment: items per project window, requests per key per second, import items. */
export const RAISED_LIMITS = { INLET_LIMIT_BURST: '1000000000', INLET_LIMIT_SUSTAINED: '1000000000', INLET_LIMIT_KEY_RPS: '1000000', INLET_LIMIT_IMPORT: '1000000000' } as const;

/**
 * The environment of a server: its limits (LimitsMode), quiet logs, no
 * metrics listener, and only the store and Redis this deployment is about.
 * Other INLET_* settings of the caller pass through, so a run can try one.
 */
export function serverEnv(o: { limits: LimitsMode; databaseUrl: string | null; redisUrl?: string }): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, INLET_LOG_LEVEL: 'warn', INLET_METRICS_PORT: '0' };
  for (const k of ['INLET_REDIS_URL', 'INLET_DATA_DIR', 'INLET_PORT', 'INLET_HOST', 'INLET_DATABASE_URL']) delete env[k];
  for (const k of Object.keys(RAISED_LIMITS) as (keyof typeof RAISED_LIMITS)[]) {
    if (o.limits === 'off') env[k] = '0';
    else if (o.limits === 'raised') env[k] = RAISED_LIMITS[k];
    else delete env[k];
  }
  if (o.databaseUrl !== null) env.INLET_DATABASE_URL = o.databaseUrl;
  if (o.redisUrl !== undefined) env.INLET_REDIS_URL = o.redisUrl;
  return env;
}

/** Inlet as measured: one or more servers of one checkout on one store, and what was sent to it. */
export class Deployment {
  /** Events stored so far, counted from the answers (accepted less repeats). */
  stored = 0;
  /** The project windows the servers' answers name (empty with limits off). */
  policy: LimitWindow[] = [];
  /** How its limits were set. */
  limits: LimitsMode = 'off';
  private readonly cursors = new Map<string, BodyCursor>();
  private readonly watches: RssWatch[];
  private peakRss = 0;

  constructor(
    readonly name: string,
    readonly servers: readonly Listening[],
    readonly tenants: readonly Tenant[],
    /** False for the HTTP baseline, which stores nothing: its bodies never need fresh insert_ids. */
    readonly storesEvents: boolean,
    /** Whether PostgreSQL's CPU belongs to this deployment's phases. */
    readonly countsDb: boolean,
    private readonly onStop: () => Promise<void> = async () => {},
  ) {
    this.watches = servers.map((s) => new RssWatch(s.pid));
  }

  get urls(): string[] {
    return this.servers.map((s) => s.url);
  }

  get pids(): number[] {
    return this.servers.map((s) => s.pid);
  }

  /** Takes up where `other` left off, on a copy of its store: the same cursors (copied) and count of events stored. */
  resumeFrom(other: Deployment): void {
    for (const [name, c] of other.cursors) this.cursors.set(name, c.copy());
    this.stored = other.stored;
  }

  /** The cursor of a pool for this deployment, continued from phase to phase so that nothing is sent twice. */
  cursor(pool: BodyPool): BodyCursor {
    let c = this.cursors.get(pool.name);
    if (c === undefined) this.cursors.set(pool.name, (c = new BodyCursor(pool, this.storesEvents)));
    return c;
  }

  /** The peak resident memory of each server since the last call (the highest of them), in MiB. */
  takePhasePeakMiB(): number {
    return Math.max(0, ...this.watches.map((w) => w.takePhasePeakMiB()));
  }

  /** VmHWM: the most memory any of its servers held at any moment, in MiB (kept once they have stopped). */
  lifetimePeakRssMiB(): number {
    this.peakRss = Math.max(this.peakRss, ...this.watches.map((w) => w.lifetimePeakMiB()));
    return this.peakRss;
  }

  /** Stops every server (SIGTERM, then SIGKILL after 20 s), says how each ended, and drops the store. */
  async stop(log: Log): Promise<void> {
    this.lifetimePeakRssMiB();
    for (const w of this.watches) w.stop();
    for (const s of this.servers) {
      const code = await stopProcess(s.proc);
      if (code !== 0) log(`bench: ${this.name}: a server exited ${code}`);
      const err = s.stderr().trim();
      if (err !== '') log(`bench: ${this.name}: a server said on stderr:\n${err.split('\n').slice(-10).join('\n')}`);
    }
    await this.onStop();
  }
}

export interface StartOptions {
  name: string;
  checkout: Checkout;
  store: FreshStore;
  servers: number;
  limits: LimitsMode;
  redisUrl?: string;
  cpuProfDir?: string | null;
  probe: BodyPool;
}

/** Starts the servers of a deployment on a fresh store and probes each; the store is dropped when it stops. */
export async function startDeployment(o: StartOptions, log: Log): Promise<Deployment> {
  const env = serverEnv({ limits: o.limits, databaseUrl: o.store.databaseUrl, redisUrl: o.redisUrl });
  const prof = o.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', o.cpuProfDir] : [];
  const servers: Listening[] = [];
  try {
    for (let i = 0; i < o.servers; i++) servers.push(await startListening([...prof, o.checkout.bin, 'serve', '--port', '0', '--data-dir', o.store.dataDir], env));
  } catch (e) {
    for (const s of servers) await stopProcess(s.proc);
    await o.store.drop();
    throw e;
  }
  const d = new Deployment(o.name, servers, o.store.tenants, true, o.store.databaseUrl !== null, o.store.drop);
  d.limits = o.limits;
  try {
    for (let i = 0; i < servers.length; i++) await probe(d, i, i % d.tenants.length, o.probe);
  } catch (e) {
    await d.stop(log);
    throw e;
  }
  return d;
}

/**
 * Fails the run unless the server accepts every generated item, plain and
 * gzipped: a generator that drifted from the API would otherwise be measured
 * as refusals, which are cheaper than writes. Reads the limits the answers
 * name on the way.
 */
async function probe(d: Deployment, server: number, tenant: number, pool: BodyPool): Promise<void> {
  for (const [i, gzip] of [[0, false], [1, true]] as const) {
    const raw = pool.raw[i]!;
    const res = await fetch(new URL('/api/v1/batch', d.urls[server]), {
      method: 'POST',
      headers: batchHeaders(d.tenants[tenant]!.key, gzip),
      body: new Uint8Array(gzip ? gzipSync(raw) : raw),
    });
    const text = await res.text();
    const a = JSON.parse(text) as { accepted?: number; errors?: unknown[]; dropped?: unknown[]; duplicates?: unknown[] };
    if (res.status !== 202 || a.accepted !== pool.itemsPerBody || (a.errors?.length ?? 1) > 0 || (a.dropped?.length ?? 1) > 0) {
      throw new Error(`${d.name} did not accept every generated item (${res.status}); fix bench/payloads.ts: ${text.slice(0, 2000)}`);
    }
    d.stored += a.accepted - (a.duplicates?.length ?? 0);
    d.policy = parseRateLimitPolicy(res.headers.get('ratelimit-policy'));
  }
}
