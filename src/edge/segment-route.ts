import type { FastifyReply, FastifyRequest } from 'fastify';
import { echoed } from '../domain/echo.js';
import { type BearerResult, readBearer } from '../domain/keys.js';
import { type BatchRouteDeps, answering, checkKey } from './batch-route.js';
import { ingestForeign } from './foreign-intake.js';
import { normaliseHost } from './host.js';
import { type Refusal, checkBrowser, checkMethod, isRefusal } from './request-checks.js';
import { SEGMENT_PATHS, type SegmentPath } from '../pipeline/segment-map.js';

/**
 * The Segment-spec endpoints (/v1/batch, /v1/track, …): the batch endpoint's
 * own steps in its order, with the key also taken from HTTP Basic or from the
 * body, and answers SDKs written for Segment understand: 200 with the batch
 * answer, request errors in the envelope with their usual statuses (so 429
 * and 503 are retried with the same messageId).
 */
export function segmentRoute(deps: BatchRouteDeps) {
  return answering(deps, run);
}

async function run(deps: BatchRouteDeps, req: FastifyRequest, reply: FastifyReply): Promise<Refusal | null> {
  const url = req.raw.url ?? '/';
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  const refused = checkSegmentPath(path, normaliseHost(req.headers.host), deps.trackerHosts) ?? checkMethod(req.method) ?? checkBrowser(req.headers);
  if (refused !== null) return refused;
  const type = SEGMENT_PATHS.get(path as SegmentPath)!;

  // A key in the header is checked before the body is read, as on the batch
  // endpoint; older SDKs put it in the body, which must be read to find it.
  const headerKey = readSegmentKey(req.headers.authorization);
  const early = headerKey.kind === 'token' ? await checkKey(deps, req, headerKey) : null;
  if (isRefusal(early)) return early;

  return ingestForeign(deps, req, reply, early, { shape: { intake: 'segment', type }, missingKey: MISSING_KEY });
}

const MISSING_KEY =
  'Send your Inlet server key as the HTTP Basic user name with an empty password (what Segment and RudderStack SDKs do with their write key), as "Authorization: Bearer <key>", or as "writeKey" in the body.';

/** The path checks for these paths: a tracker host or an unknown /v1 path is 404. */
function checkSegmentPath(path: string, host: string, trackerHosts: Set<string>): Refusal | null {
  if (trackerHosts.has(host)) {
    return { code: 'not_found', message: `${host} is a tracker domain for browser traffic; send server events to the app host.` };
  }
  if (SEGMENT_PATHS.has(path as SegmentPath)) return null;
  return { code: 'not_found', message: `There is no endpoint at ${echoed(path)}. The Segment-spec endpoints are ${[...SEGMENT_PATHS.keys()].join(', ')}.` };
}

/**
 * The key from "Authorization: Basic" (the key as user name, password empty,
 * as Segment's and RudderStack's SDKs send their write key) or "Bearer".
 */
export function readSegmentKey(header: string | undefined): BearerResult {
  const bearer = readBearer(header);
  if (bearer.kind === 'token' || header === undefined) return bearer;
  const m = /^basic[ \t]+([A-Za-z0-9+/=]+)[ \t]*$/i.exec(header);
  if (m === null) return { kind: 'missing' };
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const user = colon === -1 ? decoded : decoded.slice(0, colon);
  return user === '' ? { kind: 'missing' } : { kind: 'token', token: user };
}
