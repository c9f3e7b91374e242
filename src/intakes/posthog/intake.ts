/**
 * The PostHog-compatible endpoints (/batch/, /capture/, /e/, /i/v0/e/), so
 * code written for posthog-node (or PostHog's HTTP capture API) works by
 * changing its host: the key also taken from the body ("api_key" or "token",
 * where posthog-node puts it), gzip named either by Content-Encoding or by
 * ?compression=gzip-js, and answers as the Segment intake gives them: 200
 * with the batch answer, request errors in the envelope with their statuses.
 */
import { echoed } from '../../domain/echo.js';
import { readBearer } from '../../domain/keys.js';
import type { WireShape } from '../../pipeline/foreign-body.js';
import type { Refusal } from '../../domain/intake/refusal.js';
import { LIVE } from '../batch/endpoints.js';
import { type BodyEncoding, type Intake, NO_OPTIONS, type QueryOptions } from '../intake.js';
import { POSTHOG_PATHS, POSTHOG_WIRE } from './posthog-map.js';

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

/** A gzip body named so in the query: shared, never written to. */
const GZIP_QUERY: Readonly<QueryOptions> = Object.freeze({ validate: false, strict: false, encoding: 'gzip' });

/** The query's options: only its compression is read. */
function readQuery(query: string): QueryOptions | Refusal {
  const encoding = queryEncoding(query);
  if (encoding === undefined || encoding === 'identity') return NO_OPTIONS;
  return encoding === 'gzip' ? GZIP_QUERY : encoding;
}

/** Every PostHog body is in the one shape. */
const SHAPE: WireShape = { intake: 'posthog' };

/** The path alone of a request's target. */
function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

export const POSTHOG_INTAKE: Intake = {
  name: 'posthog',
  route: { methods: ['POST'], paths: [...POSTHOG_PATHS], owns: (url) => POSTHOG_PATHS.has(pathOf(url)) },
  checkPath: checkPostHogPath,
  key: { header: readBearer, inBody: { missingKey: MISSING_KEY } },
  query: readQuery,
  // PostHog's browser library sends text/plain; the JSON check decides.
  anyContentType: true,
  profile: () => LIVE,
  wire: { map: POSTHOG_WIRE, shape: () => SHAPE },
  answers: { okStatus: 200, refuseAllInvalid: false },
};
