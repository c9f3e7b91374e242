import type { FastifyReply, FastifyRequest } from 'fastify';
import { echoed } from '../domain/echo.js';
import { type BearerResult, readBearer } from '../domain/keys.js';
import { checkBatch } from '../pipeline/checked-batch.js';
import { parseJsonBody } from '../pipeline/parse-body.js';
import { type BatchRouteDeps, admitItems, answering, checkKey, ingestChecked, itemContext, readAdmitted } from './batch-route.js';
import { BATCH_PATH, ENDPOINTS } from './endpoints.js';
import { normaliseHost } from './host.js';
import { type Refusal, checkBrowser, checkMethod, isRefusal } from './request-checks.js';
import type { ReadShare } from './read-budget.js';
import { SEGMENT_PATHS, type SegmentPath, readSegmentBody, segmentItems, writeKeyOf } from './segment-map.js';

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

  // Some of those SDKs send a gzip body without a Content-Type: the JSON check decides.
  // A body read before its key is known is reserved in the keyless pool,
  // under its client's address, so it cannot take the room of bodies with a key.
  const body = await readAdmitted(deps, req, early === null ? keyInBodyShare(req.ip) : { projectId: early.project.id }, { anyContentType: true });
  if (body === null || isRefusal(body)) return body;
  try {
    const parsed = parseJsonBody(body.bytes);
    const auth = early ?? (await checkKey(deps, req, isRefusal(parsed) ? { kind: 'missing' } : writeKeyOf(parsed.json)));
    if (isRefusal(auth)) return auth.code === 'missing_key' ? { ...auth, message: MISSING_KEY } : auth;
    if (isRefusal(parsed)) return parsed;
    const segment = readSegmentBody(parsed.json, type);
    if (isRefusal(segment)) return segment;
    const arrival = deps.clock();
    const { items, ownEvents } = segmentItems(segment, arrival);
    const profile = ENDPOINTS.get(BATCH_PATH)!;
    const overLimit = await admitItems(deps, req, reply, auth, items.length, arrival, profile);
    if (overLimit !== null) return overLimit;
    const checked = checkBatch(items, [], itemContext(auth, arrival, profile, ownEvents));
    return await ingestChecked(deps, req, reply, auth, checked, {
      validate: false,
      strict: false,
      arrival,
      // The SDKs take any 2xx as delivered and log the rest as failures, so an
      // answer in which every item was refused is still a 200 that lists them.
      dialect: { okStatus: 200, refuseAllInvalid: false },
    });
  } finally {
    body.release();
  }
}

/**
 * The read-budget share of a body whose key, if any, is inside it: its
 * client's address within the keyless pool (as a trusted proxy names it, if
 * any; an IPv4 address the same whether it came over IPv4 or as IPv4-mapped
 * IPv6). One share for all such bodies would let anyone without a key hold it
 * and lock out every client sending its key this way.
 */
export function keyInBodyShare(remoteAddress: string | undefined): ReadShare {
  const addr = remoteAddress ?? 'unknown';
  return { address: addr.toLowerCase().startsWith('::ffff:') && addr.includes('.') ? addr.slice(7) : addr };
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
