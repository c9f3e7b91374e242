import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { createAdmin } from '../../src/domain/admin.js';
import type { Collector } from '../../src/domain/collector.js';
import { LocalLimiter } from '../../src/limiters/local/local-limiter.js';
import { DEFAULT_LIMITS, type LimitSettings } from '../../src/domain/limits/policies.js';
import type { LiveWindow } from '../../src/domain/live-window.js';
import type { Admission } from '../../src/edge/admission.js';
import type { Metrics } from '../../src/metrics/metrics.js';
import type { CheckThreads } from '../../src/intakes/check-threads.js';
import type { EdgeCounters } from '../../src/edge/edge-counters.js';
import type { ReadBudget } from '../../src/edge/read-budget.js';
import type { DestinationReach } from '../../src/stores/port-destinations.js';
import type { Store } from '../../src/stores/port.js';
import { SqliteStore } from '../../src/stores/sqlite/sqlite-store.js';
import { readSettings } from '../../src/settings.js';
import { composeApp } from '../../src/server.js';

/** A clock tests move by hand. */
export class TestClock {
  constructor(public ms = Date.UTC(2026, 10, 22, 12, 0, 0)) {}
  now = (): number => this.ms;
  advance(ms: number): void {
    this.ms += ms;
  }
}

export function tempDir(prefix = 'inlet-test-'): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface Fixture {
  app: FastifyInstance;
  /** The domain's write path over the fixture's store, as the server runs it. */
  collector: Collector;
  clock: TestClock;
  key: string;
  orgId: string;
  projectId: string;
  sourceId: string;
  admin: ReturnType<typeof createAdmin>;
  close: () => Promise<void>;
}

export interface FixtureOptions {
  store?: Store;
  limits?: Partial<LimitSettings>;
  apiEnabled?: boolean;
  filterBots?: boolean;
  recordIp?: boolean;
  trackerHosts?: string[];
  /** Proxies whose X-Forwarded-For is believed; none when absent. */
  trustedProxies?: string[];
  retiredVersions?: string[];
  clock?: TestClock;
  /** Where the app's JSON log lines go; none when absent. */
  logStream?: NodeJS.WritableStream;
  /** Back-pressure on bodies; the server's default when absent. */
  admission?: Admission;
  /** Counted into when given (metrics tests). */
  metrics?: Metrics;
  /** Bounds on bodies being read; the server's default when absent. */
  reading?: ReadBudget;
  /** Counters the app adds to; a fresh one when absent. */
  counters?: EdgeCounters;
  /** The request timeout; the server's default when absent. */
  requestTimeoutMs?: number;
  /** Open connections at most; no cap when absent. */
  maxConnections?: number;
  /** The console's live window; the server's default when absent. */
  live?: LiveWindow;
  /** The console's live views at once, per server and per session; the server's defaults when absent. */
  liveStreams?: number;
  liveStreamsPerSession?: number;
  /** A live view's unsent bytes and time without progress before it is dropped; the server's defaults when absent. */
  liveBufferBytes?: number;
  liveStallMs?: number;
  /** Threads that check large bodies; every body on the main thread when absent. */
  checks?: CheckThreads;
  /**
   * What the console's new destinations may reach; when absent, public
   * addresses only, through a resolver that knows no name (so that nothing
   * is looked up beyond this machine).
   */
  destinationReach?: Omit<DestinationReach, 'selfPort'>;
  /** Another server of the same database: the org, project, source and key of a fixture already made on it. */
  sameAs?: Pick<Fixture, 'orgId' | 'projectId' | 'sourceId' | 'key'>;
}

/** A resolver for tests: no name resolves, and nothing is asked of the network. */
export async function knowsNoName(host: string): Promise<never> {
  throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
}

/** A server on a fresh embedded store with one org, project (API enabled), source and key. */
export async function makeFixture(opts: FixtureOptions = {}): Promise<Fixture> {
  const tmp = opts.store ? null : tempDir();
  const clock = opts.clock ?? new TestClock();
  const store = opts.store ?? SqliteStore.open(tmp!.dir);
  const admin = createAdmin(store, clock.now);
  const ids = opts.sameAs ?? (await provision(admin, opts));
  const limiter = new LocalLimiter();
  // Built by the server's own composition, over the fixture's parts.
  const parts = {
    store,
    limiter,
    limits: { ...DEFAULT_LIMITS, ...opts.limits },
    clock: clock.now,
    metrics: opts.metrics,
    // When absent, public addresses only, through a resolver that knows no name.
    destinationReach: opts.destinationReach ?? { allowPrivate: false, ownDatabaseUrl: null, resolve: knowsNoName },
  };
  const { app, collector } = composeApp(parts, {
    baseUrl: 'http://inlet.test',
    // Through the setting, as a server reads them: it is what spells them as requests are compared.
    trackerHosts: readSettings({ INLET_TRACKER_HOSTS: (opts.trackerHosts ?? []).join(',') }).trackerHosts,
    trustedProxies: new Set(opts.trustedProxies ?? []),
    retiredVersions: new Set(opts.retiredVersions ?? []),
    logger: opts.logStream ? { level: 'info', stream: opts.logStream } : false,
    admission: opts.admission,
    reading: opts.reading,
    counters: opts.counters,
    requestTimeoutMs: opts.requestTimeoutMs,
    maxConnections: opts.maxConnections,
    live: opts.live,
    liveStreams: opts.liveStreams,
    liveStreamsPerSession: opts.liveStreamsPerSession,
    liveBufferBytes: opts.liveBufferBytes,
    liveStallMs: opts.liveStallMs,
    checks: opts.checks,
  });
  await app.ready();
  return {
    app,
    collector,
    clock,
    ...ids,
    admin,
    close: async () => {
      await app.close();
      await collector.close();
      await limiter.close();
      tmp?.remove();
    },
  };
}

async function provision(admin: ReturnType<typeof createAdmin>, opts: FixtureOptions) {
  const org = await admin.createOrg('Acme');
  const project = await admin.createProject({ name: 'Web', orgId: org.id, apiEnabled: opts.apiEnabled ?? true });
  const source = await admin.createSource({ projectId: project.id, name: 'Billing', filterBots: opts.filterBots, recordIp: opts.recordIp });
  const key = await admin.createKey(source.id);
  return { orgId: org.id, projectId: project.id, sourceId: source.id, key: key.key };
}

/** POSTs a batch with the fixture's key. */
export function send(
  f: Pick<Fixture, 'app' | 'key'>,
  body: unknown,
  opts: { query?: string; headers?: Record<string, string>; raw?: string | Buffer; path?: string } = {},
) {
  return f.app.inject({
    method: 'POST',
    url: `${opts.path ?? '/api/v1/batch'}${opts.query ? `?${opts.query}` : ''}`,
    headers: { authorization: `Bearer ${f.key}`, 'content-type': 'application/json', ...opts.headers },
    payload: opts.raw ?? JSON.stringify(body),
  });
}
