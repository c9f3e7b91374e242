import type { FastifyReply, FastifyRequest } from 'fastify';
import { echoed } from '../domain/echo.js';
import { readBearer } from '../domain/keys.js';
import { type BatchRouteDeps, answering, checkKey } from './batch-route.js';
import { ingestForeign } from './foreign-intake.js';
import { normaliseHost } from './host.js';
import { POSTHOG_PATHS } from '../pipeline/posthog-map.js';
import { type BodyEncoding, type Refusal, checkBrowser, checkMethod, isRefusal } from './request-checks.js';

/**
 * The PostHog-compatible endpoints (/batch/, /capture/, /e/, /i/v0/e/): the
 * batch endpoint's own steps in its order, as the Segment intake takes them,
 * with the key also taken from the body ("api_key" or "token", where
 * posthog-node puts it), gzip named either by Content-Encoding or by
 * ?compression=gzip-js, and answers as the Segment intake gives them: 200
 * with the batch answer, request errors in the envelope with their statuses.
 */
export function postHogRoute(deps: BatchRouteDeps) {
  return answering(deps, run);
}

async function run(deps: BatchRouteDeps, req: FastifyRequest, reply: FastifyReply): Promise<Refusal | null> {
  const url = req.raw.url ?? '/';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const refused = checkPostHogPath(path, normaliseHost(req.headers.host), deps.trackerHosts) ?? checkMethod(req.method) ?? checkBrowser(req.headers);
  if (refused !== null) return refused;

  const headerKey = readBearer(req.headers.authorization);
  const early = headerKey.kind === 'token' ? await checkKey(deps, req, headerKey) : null;
  if (isRefusal(early)) return early;

  const encoding = queryEncoding(q === -1 ? '' : url.slice(q + 1));
  if (isRefusal(encoding)) return encoding;
  // PostHog's browser library sends text/plain; the JSON check decides.
  return ingestForeign(deps, req, reply, early, { shape: { intake: 'posthog' }, missingKey: MISSING_KEY, encoding });
}

const MISSING_KEY = 'Send your Inlet server key as "api_key" in the body (what posthog-node does with its project key), or as "Authorization: Bearer <key>".';

/** The path checks for these paths: a tracker host is 404. */
function checkPostHogPath(path: string, host: string, trackerHosts: Set<string>): Refusal | null {
  if (trackerHosts.has(host)) {
    return { code: 'not_found', message: `${host} is a tracker domain for browser traffic; send server events to the app host.` };
  }
  if (POSTHOG_PATHS.has(path)) return null;
  return { code: 'not_found', message: `There is no endpoint at ${echoed(path)}. The PostHog-compatible endpoints are /batch/, /capture/, /e/ and /i/v0/e/.` };
}

/**
 * The body's compression as PostHog's browser library names it in the query
 * (?compression=gzip-js); undefined leaves it to Content-Encoding. Other query
 * parameters PostHog's libraries send (ver, ip, _) are ignored.
 */
export function queryEncoding(query: string): BodyEncoding | undefined | Refusal {
  const compression = new URLSearchParams(query).getAll('compression');
  if (compression.length === 0) return undefined;
  const c = compression[0]!.toLowerCase();
  if (compression.length === 1 && (c === 'gzip-js' || c === 'gzip')) return 'gzip';
  if (compression.length === 1 && (c === '' || c === 'none')) return undefined;
  return { code: 'unsupported_encoding', message: `compression=${echoed(compression.join(','))} is not supported; send gzip-js, or leave it out.` };
}
