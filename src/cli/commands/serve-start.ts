/**
 * The server `inlet serve` starts: its parts wired together, the ports
 * bound, and the stop on SIGTERM or SIGINT.
 */
import type http from 'node:http';
import { Worker } from 'node:worker_threads';
import { type Config, loadConfig } from '../../config.js';
import { Collector } from '../../domain/collector.js';
import { openLimiter } from '../../limiters/open-limiter.js';
import { RateLimits } from '../../domain/limits/policies.js';
import { startRetention } from '../../domain/retention.js';
import { DeliveryService } from '../../domain/delivery/delivery-service.js';
import { ThreadCourier } from '../../domain/delivery/courier-thread.js';
import { DELIVERY_THREAD_URL, type DeliveryThreadData } from '../delivery-thread.js';
import { Admission } from '../../edge/admission.js';
import { buildApp } from '../../edge/app.js';
import { CheckThreads } from '../../pipeline/check-threads.js';
import { EdgeCounters } from '../../edge/edge-counters.js';
import { ReadBudget } from '../../edge/read-budget.js';
import { Metrics } from '../../metrics/metrics.js';
import { startMetricsServer, stopMetricsServer } from '../../metrics/metrics-server.js';
import { observedCollector } from '../../metrics/observed-collector.js';
import { ConfigError, SETTINGS, type SettingSpec, settingName } from '../../settings.js';
import { checkDestination } from '../../stores/open-sender.js';
import { describeStore, hasStore, openStore } from '../../stores/open-store.js';
import { type Store, StoreUnavailableError } from '../../stores/port.js';
import { bindFailure, ensurePortsFree } from '../serve-ports.js';
import { commandName } from '../command-name.js';
import { firstSteps } from '../first-steps.js';
import { limitHeapGrowth } from '../heap-growth.js';

/** How long requests in flight get to finish after SIGTERM before their connections are cut. */
const SHUTDOWN_DEADLINE_MS = 25_000;

/** Starts the server with these flags (and the environment) and serves until SIGTERM or SIGINT. */
export async function serve(flags: Record<string, string | undefined>): Promise<void> {
  limitHeapGrowth();
  const cfg = loadConfig(process.env, flags);
  const cleanups: (() => Promise<void>)[] = [];
  try {
    await start(cfg, cleanups);
  } catch (e) {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    throw e;
  }
}

async function start(cfg: Config, cleanups: (() => Promise<void>)[]): Promise<void> {
  // Before the store is opened (or made): a start that cannot listen leaves nothing behind.
  await ensurePortsFree(cfg);
  const metrics = new Metrics();
  // Known before opening, which makes a store where there is none: a serve started in the wrong
  // directory must say that its store is new. One that cannot be reached is openStore's to report.
  const existed = await hasStore(cfg).catch(() => true);
  const store = await openStore(cfg).catch((e: unknown) => {
    throw storeFailure(cfg, e);
  });
  await store.prepareToServe?.();
  const collector = observedCollector(new Collector(store, { observer: metrics }), metrics);
  cleanups.push(() => collector.close());
  const logger = { level: cfg.logLevel, stream: process.stderr };
  // The limiter exists before the app (the app needs it), so its warnings reach
  // the app's log through this late-bound function.
  let warn = (msg: string): void => void process.stderr.write(`${msg}\n`);
  const limiter = openLimiter(cfg.redisUrl, {
    onError: (err) => warn(`Redis unavailable for rate limits; each server counts alone until it answers again: ${err.message}`),
  });
  cleanups.push(() => limiter.close());
  // Kept here so the metrics can read them: bytes admitted, waiting and being read, clients gone.
  const admission = new Admission(cfg.admission.budgetBytes, cfg.admission.waitMs);
  const { budgetBytes, keyBudgetBytes, keylessBudgetBytes, addressBudgetBytes } = cfg.reading;
  const reading = new ReadBudget(budgetBytes, keyBudgetBytes, keylessBudgetBytes, addressBudgetBytes);
  const counters = new EdgeCounters();
  const checks = new CheckThreads(cfg.checkThreads, {
    onError: (err) => {
      // Only after a request, so once the app exists.
      app.log.error({ err }, 'a check thread failed or could not start; its bodies are checked on the main thread');
    },
  });
  // After the app: its close waits for requests in flight, their checks included.
  cleanups.push(() => checks.close());
  const destinationReach = { allowPrivate: cfg.destinationsAllowPrivate, ownDatabaseUrl: cfg.databaseUrl };
  const app = buildApp({
    collector,
    checkDestination: (d, selfPort) => checkDestination(d, { ...destinationReach, selfPort }),
    limits: new RateLimits(limiter, cfg.limits),
    clock: Date.now,
    baseUrl: cfg.baseUrl ?? `http://localhost:${cfg.port}`,
    trackerHosts: cfg.trackerHosts,
    trustedProxies: cfg.trustedProxies,
    retiredVersions: cfg.retiredVersions,
    logger,
    admission,
    reading,
    counters,
    maxConnections: cfg.maxConnections,
    liveStreams: cfg.liveStreams,
    liveStreamsPerSession: cfg.liveStreamsPerSession,
    metrics,
    checks,
  });
  warn = (msg) => app.log.warn(msg);
  cleanups.push(() => app.close());
  // The metrics listener first: a start that fails on its port has not told anyone it listens.
  let metricsServer: http.Server | null = null;
  if (cfg.metricsPort !== 0) {
    const opened = await startMetricsServer(metrics, cfg.metricsPort, cfg.metricsHost).catch((e: unknown) => {
      throw listenFailure(e, SETTINGS.metricsPort, SETTINGS.metricsHost, cfg.metricsPort, cfg.metricsHost);
    });
    metricsServer = opened;
    cleanups.push(() => stopMetricsServer(opened));
  }
  await app.listen({ port: cfg.port, host: cfg.host }).catch((e: unknown) => {
    throw listenFailure(e, SETTINGS.port, SETTINGS.host, cfg.port, cfg.host);
  });
  if (metricsServer !== null) {
    app.log.info({ url: `http://${bracketed(cfg.metricsHost)}:${cfg.metricsPort}/metrics` }, 'metrics listening');
  }
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr !== null ? addr.port : cfg.port;
  // With --port 0 the port is known only now: links in errors and docs must name it.
  if (cfg.baseUrl === null) app.inletBaseUrl = `http://localhost:${port}`;
  process.stdout.write(`inlet listening on http://${bracketed(cfg.host)}:${port}\n`);
  // After the line above, which scripts wait for: where the data is, so a command run elsewhere can be pointed at it.
  const base = app.inletBaseUrl.replace(/\/+$/, '');
  // Then what to run next while the store is empty, in the same write: a reader that has the
  // reference line has them too.
  const next = firstSteps({ ...cfg, ...(await storeHolds(store)), command: commandName(process.argv[1], process.cwd()), cwd: process.cwd() });
  process.stdout.write(`data: ${describeStore(cfg)}${existed ? '' : ' (new: created now)'}\nconsole: ${base}/console\nreference: ${base}/docs/api\n${next}`);
  const retention = startRetention(store, Date.now, {
    done: (r) => {
      if (r.erasuresFinished > 0) {
        app.log.warn({ erasures: r.erasuresFinished, events: r.erasedEvents }, 'retention: finished erasures a stopped process had left; their events are deleted now');
      }
      if (r.deleted > 0 || r.dropped > 0) app.log.info({ deleted: r.deleted, dropped: r.dropped }, 'retention: expired events deleted');
    },
    failed: (err) => app.log.warn({ err }, 'retention pass failed; the next one tries again'),
  });
  // Destinations: delivered beside ingestion, each in a loop of its own (docs/destinations.md).
  const lease = cfg.destinationLeaseMs;
  const courier = new ThreadCourier(() => new Worker(DELIVERY_THREAD_URL, { workerData: { dataDir: cfg.dataDir, databaseUrl: cfg.databaseUrl, reach: { ...destinationReach, selfPort: port } } satisfies DeliveryThreadData }));
  const delivery = new DeliveryService({
    store: store.destinations,
    courier,
    self: { baseUrl: app.inletBaseUrl, port },
    observer: metrics,
    timing: { leaseMs: lease, renewMs: Math.round(lease / 3), scanMs: Math.round(lease / 3) },
    log: { warn: (fields, msg) => app.log.warn(fields, msg), info: (fields, msg) => app.log.info(fields, msg) },
  });
  delivery.start();

  let stopping = false;
  let endDrain = (): void => undefined;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) {
      // A second signal: the operator does not want to wait for the drain.
      endDrain();
      return;
    }
    stopping = true;
    // Readiness goes first, while everything still serves, so a load balancer
    // that polls /readyz stops sending here before any connection is refused.
    app.readiness.beginStop();
    app.log.info({ signal, drain_ms: cfg.stopDrainMs }, 'stopping: /readyz answers 503; finishing requests in flight');
    if (cfg.stopDrainMs > 0) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, cfg.stopDrainMs);
        endDrain = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
    // close() stops accepting and waits for requests in flight, their commits
    // included. Keep-alive connections that were busy when it began turn idle
    // only afterwards, and Node would wait out their 72 s timeout: sweep them
    // as they go idle, and cut whatever is left after a deadline.
    const sweep = setInterval(() => app.server.closeIdleConnections(), 50);
    const deadline = setTimeout(() => app.server.closeAllConnections(), SHUTDOWN_DEADLINE_MS);
    await app.close();
    clearInterval(sweep);
    clearTimeout(deadline);
    await retention.stop();
    await delivery.stop();
    await courier.close();
    await checks.close();
    await collector.close();
    await limiter.close();
    if (metricsServer !== null) await stopMetricsServer(metricsServer);
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

function bracketed(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

/** Whether the store holds a project and a console account yet; a store that cannot tell is taken to hold both (no hints). */
async function storeHolds(store: Store): Promise<{ hasProject: boolean; hasUser: boolean }> {
  try {
    const [projects, users] = await Promise.all([store.listings.listProjects(null), store.accounts.listUsers()]);
    return { hasProject: projects.length > 0, hasUser: users.length > 0 };
  } catch {
    return { hasProject: true, hasUser: true };
  }
}

/** A listen() failure as a sentence that names the setting to change. */
function listenFailure(e: unknown, portSetting: SettingSpec<unknown>, hostSetting: SettingSpec<unknown>, port: number, host: string): Error {
  return bindFailure((e as NodeJS.ErrnoException).code, e as Error, { port, host, portSetting, hostSetting });
}

/** A store that cannot be opened at start, as a sentence that says what to check. */
function storeFailure(cfg: Config, e: unknown): Error {
  // The store's own refusals already say what to check.
  if (e instanceof StoreUnavailableError || e instanceof ConfigError) return e;
  const why = (e as Error).message ?? String(e);
  return cfg.databaseUrl === null
    ? new ConfigError(`The embedded store in ${cfg.dataDir} could not be opened (${why}); check ${settingName(SETTINGS.dataDir)}.`)
    : new ConfigError(`PostgreSQL could not be reached or prepared (${why}); check INLET_DATABASE_URL and that the database runs.`);
}
