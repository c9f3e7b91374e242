/**
 * The composition root: the one place the server is built from its parts.
 * `inlet serve` (cli/commands/serve-start.ts) starts it from the settings;
 * the tests build their in-process app with composeApp and start real
 * servers through `inlet serve`, as the bench does. Nothing else wires the
 * domain, the limits, the threads and the edge together.
 */
import type http from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { Config } from './config.js';
import { startDeliveryProcess } from './cli/delivery-process.js';
import { bindFailure, bracketed, ensurePortsFree } from './cli/serve-ports.js';
import { Collector } from './domain/collector.js';
import { RemoteCourier } from './domain/delivery/courier-remote.js';
import { DeliveryService } from './domain/delivery/delivery-service.js';
import { type LimitSettings, RateLimits } from './domain/limits/policies.js';
import { startRetention } from './domain/retention.js';
import { startPersonEventsFold } from './domain/people/person-events-fold.js';
import { Admission } from './edge/admission.js';
import { type AppDeps, buildApp } from './edge/app.js';
import { EdgeCounters } from './edge/edge-counters.js';
import { ReadBudget } from './edge/read-budget.js';
import { openLimiter } from './limiters/open-limiter.js';
import type { Limiter } from './limiters/port.js';
import { Metrics } from './metrics/metrics.js';
import { startMetricsServer, stopMetricsServer } from './metrics/metrics-server.js';
import { observedCollector } from './metrics/observed-collector.js';
import { CheckThreads } from './intakes/check-threads.js';
import { PLAN_REFRESH_MS } from './domain/plans/plan-book.js';
import { ConfigError, SETTINGS, type SettingSpec, settingName } from './settings.js';
import type { DestinationReach } from './stores/port-destinations.js';
import { DESTINATION_KINDS, checkDestination } from './destinations/registry.js';
import { hasStore, openStore } from './stores/open-store.js';
import { type Store, StoreUnavailableError } from './stores/port.js';

/** How long requests in flight get to finish after a stop begins before their connections are cut. */
const SHUTDOWN_DEADLINE_MS = 25_000;

/** What an app is built over, opened by the caller: startServer opens them from the settings, tests bring their own. */
export interface ServerParts {
  store: Store;
  limiter: Limiter;
  limits: LimitSettings;
  /** Epoch ms; tests pass their own. */
  clock: () => number;
  /** Counted into when given (a server always counts; tests when they read them). */
  metrics?: Metrics;
  /** What new destinations may reach; the port is the app's own, known once it listens. */
  destinationReach: Omit<DestinationReach, 'selfPort'>;
}

/** The app's settings that are not parts: its URLs, hosts, bounds and threads. */
export type AppSettings = Omit<AppDeps, 'collector' | 'limits' | 'clock' | 'metrics' | 'checkDestination' | 'destinationKinds'>;

/** The HTTP app over these parts, with the domain's write path (the collector) it sends items to. */
export function composeApp(parts: ServerParts, settings: AppSettings): { app: FastifyInstance; collector: Collector } {
  const plain = new Collector(parts.store, { clock: parts.clock, observer: parts.metrics });
  const collector = parts.metrics ? observedCollector(plain, parts.metrics) : plain;
  const app = buildApp({
    ...settings,
    collector,
    limits: new RateLimits(parts.limiter, parts.limits),
    clock: parts.clock,
    metrics: parts.metrics,
    checkDestination: (d, selfPort) => checkDestination(d, { ...parts.destinationReach, selfPort }),
    destinationKinds: DESTINATION_KINDS,
  });
  return { app, collector };
}

/** A server that listens, until stop(). */
export interface RunningServer {
  app: FastifyInstance;
  /** The port it answers on (the one given, or the one chosen for port 0). */
  port: number;
  store: Store;
  /** Whether the store was made by this start: there was none where the settings point. */
  storeIsNew: boolean;
  /**
   * Readiness off, the drain (INLET_STOP_DRAIN_MS), requests in flight
   * finished, then every part closed. Called again while stopping, it cuts
   * the drain short. The signal that asked, if any, is logged.
   */
  stop(signal?: string): Promise<void>;
}

/** What startServer reports as it goes. */
export interface StartHooks {
  /** Once it listens and before background work starts (retention, deliveries): what the command prints then. */
  listening?: (server: Omit<RunningServer, 'stop'>) => Promise<void> | void;
}

/** Builds the server from the settings, listens, and starts its background work. Whatever opened is closed again if a step fails. */
export async function startServer(cfg: Config, hooks: StartHooks = {}): Promise<RunningServer> {
  const cleanups: (() => Promise<void>)[] = [];
  try {
    return await start(cfg, hooks, cleanups);
  } catch (e) {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    throw e;
  }
}

async function start(cfg: Config, hooks: StartHooks, cleanups: (() => Promise<void>)[]): Promise<RunningServer> {
  // Before the store is opened (or made): a start that cannot listen leaves nothing behind.
  await ensurePortsFree(cfg);
  const metrics = new Metrics();
  // Known before opening, which makes a store where there is none: a serve started in the wrong
  // directory must say that its store is new. One that cannot be reached is openStore's to report.
  const existed = await hasStore(cfg).catch(() => true);
  const store = await openStore(cfg).catch((e: unknown) => {
    throw storeFailure(cfg, e);
  });
  // Closed with the write path once there is one (the collector closes its store).
  let collector: Collector | null = null;
  cleanups.push(() => (collector ?? store).close());
  await store.prepareToServe?.();
  const logger = { level: cfg.logLevel, stream: process.stderr };
  // The limiter exists before the app (the app needs it), so its warnings reach
  // the app's log through this late-bound function.
  let warn = (msg: string): void => void process.stderr.write(`${msg}\n`);
  const limiter = openLimiter(cfg.redisUrl, {
    timeoutMs: cfg.redisTimeoutMs,
    onError: (err) => warn(`Redis unavailable for rate limits; each server counts alone until it answers again: ${err.message}`),
  });
  cleanups.push(() => limiter.close());
  const { budgetBytes, keyBudgetBytes, keylessBudgetBytes, addressBudgetBytes } = cfg.reading;
  const checks = new CheckThreads(cfg.checkThreads, {
    onError: (err) => {
      // Only after a request, so once the app exists.
      app.log.error({ err }, 'a check thread failed or could not start; its bodies are checked on the main thread');
    },
  });
  // After the app: its close waits for requests in flight, their checks included.
  cleanups.push(() => checks.close());
  const destinationReach = { allowPrivate: cfg.destinationsAllowPrivate, ownDatabaseUrl: cfg.databaseUrl };
  const composed = composeApp(
    { store, limiter, limits: cfg.limits, clock: Date.now, metrics, destinationReach },
    {
      baseUrl: cfg.baseUrl ?? `http://localhost:${cfg.port}`,
      trackerHosts: cfg.trackerHosts,
      trustedProxies: cfg.trustedProxies,
      retiredVersions: cfg.retiredVersions,
      logger,
      // Made here so the metrics can read them: bytes admitted, waiting and being read, clients gone.
      admission: new Admission(cfg.admission.budgetBytes, cfg.admission.waitMs),
      reading: new ReadBudget(budgetBytes, keyBudgetBytes, keylessBudgetBytes, addressBudgetBytes),
      counters: new EdgeCounters(),
      maxConnections: cfg.maxConnections,
      liveStreams: cfg.liveStreams,
      liveStreamsPerSession: cfg.liveStreamsPerSession,
      checks,
    },
  );
  const app = composed.app;
  collector = composed.collector;
  warn = (msg) => app.log.warn(msg);
  cleanups.push(() => app.close());
  // The plan versions the sources check, compiled from start-up on and as they change, before the requests that meet them where it can.
  const stopPlanRefresh = composed.collector.plans.startRefresh(PLAN_REFRESH_MS, (err) => app.log.warn({ err }, 'reading the tracking plans in use failed; the next refresh tries again'));
  cleanups.push(stopPlanRefresh);
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
  await hooks.listening?.({ app, port, store, storeIsNew: !existed });
  const retention = startRetention(store, Date.now, {
    done: (r) => {
      if (r.erasuresFinished > 0) {
        app.log.warn({ erasures: r.erasuresFinished, events: r.erasedEvents }, 'retention: finished erasures a stopped process had left; their events are deleted now');
      }
      if (r.deleted > 0 || r.dropped > 0) app.log.info({ deleted: r.deleted, dropped: r.dropped }, 'retention: expired events deleted');
    },
    failed: (err) => app.log.warn({ err }, 'retention pass failed; the next one tries again'),
  });
  // A person's events by person (docs/design.md, "A person's events"), folded in off the request path.
  const fold = startPersonEventsFold(store, { failed: (err) => app.log.warn({ err }, 'folding events by person failed; the next pass tries again') });
  // Destinations: delivered beside ingestion, each in a loop of its own (docs/destinations.md).
  const lease = cfg.destinationLeaseMs;
  const courier = new RemoteCourier(() => startDeliveryProcess({ dataDir: cfg.dataDir, databaseUrl: cfg.databaseUrl, reach: { ...destinationReach, selfPort: port } }), {
    died: (why) => app.log.warn({ error: why }, 'the delivery process stopped; delivery starts it again (after a wait that grows while it keeps stopping young)'),
  });
  const delivery = new DeliveryService({
    store: store.destinations,
    courier,
    self: { baseUrl: app.inletBaseUrl, port },
    kinds: DESTINATION_KINDS,
    observer: metrics,
    timing: { leaseMs: lease, renewMs: Math.round(lease / 3), scanMs: Math.round(lease / 3) },
    log: { warn: (fields, msg) => app.log.warn(fields, msg), info: (fields, msg) => app.log.info(fields, msg) },
  });
  delivery.start();

  let stopping: Promise<void> | null = null;
  let endDrain = (): void => undefined;
  const stop = async (signal: string | undefined): Promise<void> => {
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
    await stopPlanRefresh();
    await fold.stop();
    await delivery.stop();
    await courier.close();
    await checks.close();
    await composed.collector.close();
    await limiter.close();
    if (metricsServer !== null) await stopMetricsServer(metricsServer);
  };
  return {
    app,
    port,
    store,
    storeIsNew: !existed,
    stop: (signal) => {
      // Asked again: the caller does not want to wait for the drain.
      if (stopping !== null) endDrain();
      else stopping = stop(signal);
      return stopping;
    },
  };
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
