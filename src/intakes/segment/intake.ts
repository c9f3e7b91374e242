/**
 * The Segment-spec endpoints (/v1/batch, /v1/track, …), so code written for
 * Segment or RudderStack works by changing its host: the key also taken from
 * HTTP Basic or from the body, and answers SDKs written for Segment
 * understand: 200 with the batch answer, request errors in the envelope with
 * their usual statuses (so 429 and 503 are retried with the same messageId).
 */
import { echoed } from '../../domain/echo.js';
import { type BearerResult, readBearer } from '../../domain/keys.js';
import type { WireShape } from '../../pipeline/foreign-body.js';
import type { Refusal } from '../../domain/intake/refusal.js';
import { LIVE } from '../batch/endpoints.js';
import type { Intake } from '../intake.js';
import { SEGMENT_PATHS, SEGMENT_WIRE, type SegmentPath } from './segment-map.js';

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

/** Each path's shape, made once: the message type it names (null on /v1/batch). */
const SHAPES: ReadonlyMap<string, WireShape> = new Map([...SEGMENT_PATHS].map(([path, type]) => [path, { intake: 'segment', type }]));

export const SEGMENT_INTAKE: Intake = {
  name: 'segment',
  route: { methods: ['POST'], paths: ['/v1/*'], owns: (url) => url.startsWith('/v1/') },
  checkPath: checkSegmentPath,
  // Older SDKs put the key in the body, which must be read to find it.
  key: { header: readSegmentKey, inBody: { missingKey: MISSING_KEY } },
  query: null,
  // Their SDKs may send a gzip body without a Content-Type: the JSON check decides.
  anyContentType: true,
  profile: () => LIVE,
  // The path check passed, so the path is one of SEGMENT_PATHS.
  wire: { map: SEGMENT_WIRE, shape: (path) => SHAPES.get(path)! },
  answers: { okStatus: 200, refuseAllInvalid: false },
};
