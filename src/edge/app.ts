import type { Socket } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions, LogController } from 'fastify';
import { consolePlugin } from '../console/plugin.js';
import { newId } from '../domain/ids.js';
import { LiveWindow } from '../domain/live-window.js';
import type { RateLimits } from '../domain/limits/policies.js';
import type { Collector } from '../domain/collector.js';
import type { Metrics } from '../metrics/metrics.js';
import type { RequestErrorCode } from '../errors/codes.js';
import { CheckThreads } from '../intakes/check-threads.js';
import { Admission } from './admission.js';
import { clientErrorHandler, refuseConnect } from './client-errors.js';
import { clientGone, isClientGone } from './client-gone.js';
import { LIVE_BUFFER_BYTES, LIVE_STALL_MS, LIVE_STREAMS, LIVE_STREAMS_PER_SESSION, LIVE_STREAMS_PER_USER, REQUEST_TIMEOUT_MS } from './connection-limits.js';
import { docsRoutes } from './docs-routes.js';
import { EdgeCounters } from './edge-counters.js';
import { sendRefusal } from './envelope.js';
import { withSafeErrors } from './log-error.js';
import { observeRequests } from './observe.js';
import { OPS_PATHS, opsRoutes } from './ops-routes.js';
import { Readiness } from './readiness.js';
import { emptyFacts } from '../domain/intake/facts.js';
import { checkHostHeader } from './host.js';
import { lingerOnClose } from './lingering-close.js';
import { ReadBudget } from './read-budget.js';
import { rootRoutes } from './root-routes.js';
import { originForm } from './request-target.js';
import type { DestinationKinds, DestinationTarget } from '../stores/port-destinations.js';
import { INTAKES } from '../intakes/registry.js';
import type { Refusal } from '../domain/intake/refusal.js';
import { intakeRoute } from './intake-checks.js';

export interface AppDeps {
  collector: Collector;
  limits: RateLimits;
  /** Epoch ms; tests pass their own. */
  clock: () => number;
  baseUrl: string;
  /** Custom tracker domains, each as normaliseHost spells it (the settings do). */
  trackerHosts: Set<string>;
  /** Proxies whose X-Forwarded-For names the client (req.ip); none: the socket's address. */
  trustedProxies?: Set<string>;
  retiredVersions: Set<string>;
  logger?: FastifyServerOptions['logger'];
  /** Back-pressure on request bodies; tests pass their own. */
  admission?: Admission;
  /** Counted into when given; the metrics listener serves them (never this app). */
  metrics?: Metrics;
  /** Bounds on bodies being read, all together and per project; tests pass their own. */
  reading?: ReadBudget;
  /** Counts of clients gone and requests refused before routing, for metrics. */
  counters?: EdgeCounters;
  /** Open connections at most, the console's live views apart; past it Node closes new ones at once. 0 or absent: no cap. */
  maxConnections?: number;
  /** The console's live views open at once on this server, and per session; LIVE_STREAMS and LIVE_STREAMS_PER_SESSION when absent. */
  liveStreams?: number;
  liveStreamsPerSession?: number;
  /** Per user, all their sessions together (at least the per-session cap); LIVE_STREAMS_PER_USER when absent. */
  liveStreamsPerUser?: number;
  /** A live view's unsent bytes and its socket's time without progress before it is dropped; tests pass their own. */
  liveBufferBytes?: number;
  liveStallMs?: number;
  /** How long a whole request (line, headers, body) may take to arrive; REQUEST_TIMEOUT_MS when absent. */
  requestTimeoutMs?: number;
  /** The console's live view of answers; tests pass their own. */
  live?: LiveWindow;
  /** Threads that check large bodies; absent: every body is checked on the main thread. */
  checks?: CheckThreads;
  /** Checks a new destination before it is kept (its kind's check: what it may reach, a connection), given the port this app listens on. */
  checkDestination: (d: DestinationTarget, selfPort: number | null) => Promise<string | null>;
  /** The kinds a destination may be of (src/destinations/registry.ts). */
  destinationKinds: DestinationKinds;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** /readyz's state: the server's stop (src/server.ts) turns it off first. */
    readiness: Readiness;
  }
}

/** Statuses Fastify's own errors can carry, as our codes; any other 4xx is a bad request. */
const FRAMEWORK_STATUS_CODES = new Map<number, RequestErrorCode>([
  [404, 'not_found'],
  [405, 'method_not_allowed'],
  [408, 'request_timeout'],
  [413, 'payload_too_large'],
  [415, 'unsupported_media_type'],
  [431, 'headers_too_large'],
]);

/** Builds the HTTP edge. It opens nothing itself: stores and limiter come in ready. */
export function buildApp(deps: AppDeps): FastifyInstance {
  const counters = deps.counters ?? new EdgeCounters();
  if (deps.metrics !== undefined) counters.sink = deps.metrics;
  const requestTimeout = deps.requestTimeoutMs ?? REQUEST_TIMEOUT_MS;
  const app = Fastify({
    // Every error logged keeps names and codes only: never the data a database quoted.
    logger: withSafeErrors(deps.logger ?? false),
    // Our own ids, never one a client sends: support looks requests up by it.
    genReqId: () => newId('req'),
    requestIdHeader: false,
    // Fastify's own per-request lines would log the URL twice; one line is written below.
    logController: new LogController({ disableRequestLogging: true }),
    requestTimeout,
    http: {
      // Node enforces the request timeout as given here, at creation: set only
      // afterwards (as Fastify does), a trickling body was not timed out on Node 20.
      requestTimeout,
      headersTimeout: requestTimeout,
      // A request without Host gets our envelope (checkHostHeader), not Node's bare 400.
      requireHostHeader: false,
      // Node's default, pinned: the reference states it (headers_too_large).
      maxHeaderSize: 16_384,
      // Node checks for timed-out requests this often (30 s by default, which would double the timeout).
      connectionsCheckingInterval: Math.max(10, Math.min(1000, requestTimeout / 4)),
    },
    // Node's own 400/408/431 (malformed requests, too slow, headers too large) in our envelope.
    clientErrorHandler: clientErrorHandler(counters),
    // req.ip is the client a trusted proxy names; Host is still read from the
    // request itself (host.ts), never from X-Forwarded-Host.
    trustProxy: deps.trustedProxies !== undefined && deps.trustedProxies.size > 0 ? [...deps.trustedProxies] : false,
    // Absolute-form targets are routed as their path, with the host they name.
    rewriteUrl: originForm,
    // While closing, requests get our own 503 (envelope, Request-Id), below.
    return503OnClosing: false,
    // A URL Fastify cannot decode is a path that does not exist, in our envelope.
    frameworkErrors: (_err, req, reply) => sendRefusal(req, reply, { code: 'not_found' }),
  });
  const liveCaps = {
    perServer: deps.liveStreams ?? LIVE_STREAMS,
    perSession: deps.liveStreamsPerSession ?? LIVE_STREAMS_PER_SESSION,
    perUser: Math.max(deps.liveStreamsPerUser ?? LIVE_STREAMS_PER_USER, deps.liveStreamsPerSession ?? LIVE_STREAMS_PER_SESSION),
    bufferBytes: deps.liveBufferBytes ?? LIVE_BUFFER_BYTES,
    stallMs: deps.liveStallMs ?? LIVE_STALL_MS,
  };
  if (deps.maxConnections) app.server.maxConnections = deps.maxConnections;
  // A live view's socket is capped apart (liveCaps) and raises Node's cap while it is open:
  // whatever the console holds, the API keeps maxConnections.
  const setApart = (socket: Socket): void => {
    if (!deps.maxConnections) return;
    app.server.maxConnections += 1;
    socket.once('close', () => (app.server.maxConnections -= 1));
  };
  // An answer sent before its request's body was read reaches the client (lingering-close.ts).
  app.server.on('connection', (socket: Socket) => lingerOnClose(socket));
  // A client may half-close once its whole request is sent and still read the
  // answer (RFC 9112). Node's default ends the socket at the client's FIN,
  // dropping the answer to a batch already being stored. Allowed, Node marks
  // the request in flight as the connection's last (closed once answered) and
  // ends an idle half-closed socket at once; timeouts still apply.
  (app.server as typeof app.server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  app.server.on('connect', refuseConnect(app, counters));
  // An Expect other than 100-continue would get Node's bare 417; RFC 9110 lets
  // a server ignore it, so the request goes through the checks like any other.
  app.server.on('checkExpectation', (req, res) => app.server.emit('request', req, res));
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.decorate('inletBaseUrl', deps.baseUrl);
  app.decorateRequest('refusedWith', null);
  app.decorateRequest('facts', null);
  app.decorate('readiness', new Readiness(deps.collector));

  // The API reads its own body (after the key and header checks, with its own
  // gzip limit), so no parser may consume it first.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));

  app.addHook('onRequest', async (req, reply) => {
    reply.header('Request-Id', req.id);
    req.facts = emptyFacts();
    const badHost = checkHostHeader(req.raw);
    if (badHost !== null) {
      refuseBeforeRoute(req, reply, badHost);
      return reply;
    }
    // A load balancer still checks a stopping server: it must read why it should stop sending.
    if (closing && !OPS_PATHS.has(req.routeOptions.url ?? '')) {
      refuseBeforeRoute(req, reply, { code: 'collection_unavailable', message: 'This server is shutting down; resend the request (another server, or this one once restarted, will take it).', headers: { Connection: 'close' } });
      return reply;
    }
  });
  observeRequests(app, deps.metrics, counters);

  // One admission for every intake: the budget is the server's memory, not a route's.
  const admission = deps.admission ?? new Admission();
  const reading = deps.reading ?? new ReadBudget();
  deps.metrics?.watchBodies({
    get admittedBytes() {
      return admission.admittedBytes;
    },
    get waitingBodyBytes() {
      return admission.waitingBodyBytes;
    },
    get readingBodyBytes() {
      return reading.readingBytes;
    },
  });
  const live = deps.live ?? new LiveWindow(undefined, undefined, deps.clock);
  // No threads of its own but the one bodies with their key inside need, started with the first.
  const checks = deps.checks ?? new CheckThreads(0);
  if (deps.checks === undefined) app.addHook('onClose', () => checks.close());
  // Each plan version this server reads is compiled ahead wherever its items may be checked (domain/plans/plan-book.ts).
  deps.collector.plans.prepareWith((plan) => checks.prepare(plan));
  const routeDeps = {
    ...deps,
    admission,
    reading,
    checks,
    counters,
    live,
  };
  // Every intake's routes, from the registry; any method, so that the method check answers 405 in its turn.
  const intakes = INTAKES.map((intake) => ({ owns: intake.route.owns, handle: intakeRoute(routeDeps, intake) }));
  for (const [i, intake] of INTAKES.entries()) for (const path of intake.route.paths) app.all(path, intakes[i]!.handle);
  const intakeOf = (url: string | undefined) => intakes.find((i) => i.owns(url ?? '/'))?.handle;
  app.register(docsRoutes());
  app.register(opsRoutes(app.readiness));
  app.register(rootRoutes());
  app.register(consolePlugin({ collector: deps.collector, clock: deps.clock, live, liveCaps, setApart, checkDestination: deps.checkDestination, destinationKinds: deps.destinationKinds }));
  app.setNotFoundHandler(async (req, reply) => {
    // Methods Fastify has no route table for still get their intake's checks.
    const intake = intakeOf(req.raw.url);
    if (intake !== undefined) return intake(req, reply);
    sendRefusal(req, reply, { code: 'not_found', message: 'There is nothing here. Send batches to POST /api/v1/batch; the reference is at /docs/api.' });
  });
  app.setErrorHandler(async (err: Error & { statusCode?: number; code?: string }, req, reply) => {
    const status = err.statusCode ?? 500;
    // Fastify reads Content-Type before any handler; a header it cannot parse
    // (the body still unread) must still go through the API's checks, in order.
    const intake = err.code?.startsWith('FST_ERR_CTP_') ? intakeOf(req.raw.url) : undefined;
    if (intake !== undefined) return intake(req, reply);
    // A client that went away is not our failure, and there is no one to answer.
    if (isClientGone(req.raw, err)) return clientGone(req, counters);
    if (status >= 500) req.log.error({ err }, 'unexpected failure');
    // A 500 tells the client what to do, never what broke inside.
    sendRefusal(req, reply, { code: status >= 500 ? 'internal_error' : (FRAMEWORK_STATUS_CODES.get(status) ?? 'bad_request') });
  });
  return app;
}

/**
 * A refusal made before any route (a stopping server, a bad Host), in the
 * shape of the intake whose route the request is for: the SDKs of an intake
 * with its own shape (Mixpanel's, Amplitude's) read only that.
 */
function refuseBeforeRoute(req: FastifyRequest, reply: FastifyReply, r: Refusal): void {
  const url = req.raw.url ?? '/';
  const shape = INTAKES.find((i) => i.route.owns(url))?.answers.shape;
  if (shape === undefined) return sendRefusal(req, reply, r);
  const q = url.indexOf('?');
  const target = { method: req.method, path: q === -1 ? url : url.slice(0, q), query: q === -1 ? '' : url.slice(q + 1), contentType: req.headers['content-type'] };
  sendRefusal(req, reply, r, (whole) => shape.refused(whole, target));
}
