import Fastify, { type FastifyInstance, type FastifyServerOptions, LogController } from 'fastify';
import { newId } from '../domain/ids.js';
import type { RateLimits } from '../domain/limits/policies.js';
import type { Metrics } from '../metrics/metrics.js';
import type { Store } from '../stores/port.js';
import { Admission } from './admission.js';
import { batchRoute } from './batch-route.js';
import { docsRoutes } from './docs-routes.js';
import { sendRefusal } from './envelope.js';
import { observeRequests } from './observe.js';
import { OPS_PATHS, opsRoutes } from './ops-routes.js';
import { Readiness } from './readiness.js';
import { emptyFacts } from './request-facts.js';

export interface AppDeps {
  store: Store;
  limits: RateLimits;
  /** Epoch ms; tests pass their own. */
  clock: () => number;
  baseUrl: string;
  trackerHosts: Set<string>;
  retiredVersions: Set<string>;
  logger?: FastifyServerOptions['logger'];
  /** Back-pressure on request bodies; tests pass their own. */
  admission?: Admission;
  /** Counted into when given; the metrics listener serves them (never this app). */
  metrics?: Metrics;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** /readyz's state: serve.ts turns it off as a stop begins. */
    readiness: Readiness;
  }
}

/** Builds the HTTP edge. It opens nothing itself: stores and limiter come in ready. */
export function buildApp(deps: AppDeps): FastifyInstance {
  const app = Fastify({
    logger: deps.logger ?? false,
    // Our own ids, never one a client sends: support looks requests up by it.
    genReqId: () => newId('req'),
    requestIdHeader: false,
    // Fastify's own per-request lines would log the URL twice; one line is written below.
    logController: new LogController({ disableRequestLogging: true }),
    requestTimeout: 30_000,
    // While closing, requests get our own 503 (envelope, Request-Id), below.
    return503OnClosing: false,
    // A URL Fastify cannot decode is a path that does not exist, in our envelope.
    frameworkErrors: (_err, req, reply) => sendRefusal(req, reply, { code: 'not_found' }),
  });
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.decorate('inletBaseUrl', deps.baseUrl);
  app.decorateRequest('refusedWith', null);
  app.decorateRequest('facts', null);
  app.decorate('readiness', new Readiness(deps.store));

  // The API reads its own body (after the key and header checks, with its own
  // gzip limit), so no parser may consume it first.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (_req, _payload, done) => done(null, undefined));

  app.addHook('onRequest', async (req, reply) => {
    reply.header('Request-Id', req.id);
    req.facts = emptyFacts();
    // A load balancer still checks a stopping server: it must read why it should stop sending.
    if (closing && !OPS_PATHS.has(req.routeOptions.url ?? '')) {
      sendRefusal(req, reply, { code: 'collection_unavailable', message: 'This server is shutting down; resend the request (another server, or this one once restarted, will take it).', headers: { Connection: 'close' } });
      return reply;
    }
  });
  observeRequests(app, deps.metrics);

  const admission = deps.admission ?? new Admission();
  deps.metrics?.watchBodies(admission);
  const api = batchRoute({ ...deps, admission });
  app.all('/api/*', api);
  app.register(docsRoutes());
  app.register(opsRoutes(app.readiness));
  app.setNotFoundHandler(async (req, reply) => {
    // Methods Fastify has no route table for still get the API's checks.
    if ((req.raw.url ?? '').startsWith('/api/')) return api(req, reply);
    sendRefusal(req, reply, { code: 'not_found', message: 'There is nothing here. Send batches to POST /api/v1/batch; the reference is at /docs/api.' });
  });
  app.setErrorHandler(async (err: Error & { statusCode?: number; code?: string }, req, reply) => {
    const status = err.statusCode ?? 500;
    // Fastify reads Content-Type before any handler; a header it cannot parse
    // (the body still unread) must still go through the API's checks, in order.
    if (err.code?.startsWith('FST_ERR_CTP_') && (req.raw.url ?? '').startsWith('/api/')) return api(req, reply);
    if (status >= 500) req.log.error({ err }, 'unexpected failure');
    // A 500 tells the client what to do, never what broke inside.
    sendRefusal(req, reply, { code: status >= 500 ? 'internal_error' : 'not_found' });
  });
  return app;
}
