/**
 * The steps an intake that speaks another API's shape (Segment's, PostHog's)
 * takes once its path, method and browser checks passed: the batch
 * endpoint's own, in its order, with a key that may be inside the body.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BearerResult } from '../domain/keys.js';
import { checkBatch } from '../pipeline/checked-batch.js';
import { parseJsonBody } from '../pipeline/parse-body.js';
import type { AuthRecord } from '../stores/port.js';
import { type BatchRouteDeps, admitItems, checkKey, ingestChecked, itemContext, readAdmitted } from './batch-route.js';
import { BATCH_PATH, ENDPOINTS } from './endpoints.js';
import type { ReadShare } from './read-budget.js';
import { type BodyEncoding, type Refusal, isRefusal } from './request-checks.js';

/** What an intake says of its own shape. */
export interface ForeignShape {
  /** The key as the intake's SDKs put it in the body. */
  keyInBody(json: unknown): BearerResult;
  /** The message of a missing_key: every way this intake takes a key. */
  missingKey: string;
  /** Items for the body's messages (and which got an event name from Inlet itself), or the body's refusal. */
  items(json: unknown, arrival: number): { items: unknown[]; ownEvents: Set<number> } | Refusal;
  /** The body's compression when the intake names it elsewhere than Content-Encoding. */
  encoding?: BodyEncoding;
}

/**
 * Reads the body (in the keyless pool while its key is unknown), finds the
 * key in it when the headers had none, maps the messages to items and takes
 * them through the limits, the item checks and the write. Answers as the
 * SDKs of such APIs expect: a 200 with the batch answer, even when every item
 * was refused (they take any 2xx as delivered and log the rest as failures).
 */
export async function ingestForeign(
  deps: BatchRouteDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  early: AuthRecord | null,
  shape: ForeignShape,
): Promise<Refusal | null> {
  // Their SDKs may send a gzip body without a Content-Type: the JSON check decides.
  // A body read before its key is known is reserved in the keyless pool,
  // under its client's address, so it cannot take the room of bodies with a key.
  const body = await readAdmitted(deps, req, early === null ? keyInBodyShare(req.ip) : { projectId: early.project.id }, { anyContentType: true, encoding: shape.encoding });
  if (body === null || isRefusal(body)) return body;
  try {
    const parsed = parseJsonBody(body.bytes);
    const auth = early ?? (await checkKey(deps, req, isRefusal(parsed) ? { kind: 'missing' } : shape.keyInBody(parsed.json)));
    if (isRefusal(auth)) return auth.code === 'missing_key' ? { ...auth, message: shape.missingKey } : auth;
    if (isRefusal(parsed)) return parsed;
    const arrival = deps.clock();
    const mapped = shape.items(parsed.json, arrival);
    if (isRefusal(mapped)) return mapped;
    const profile = ENDPOINTS.get(BATCH_PATH)!;
    const overLimit = await admitItems(deps, req, reply, auth, mapped.items.length, arrival, profile);
    if (overLimit !== null) return overLimit;
    const checked = checkBatch(mapped.items, [], itemContext(auth, arrival, profile, mapped.ownEvents));
    return await ingestChecked(deps, req, reply, auth, checked, { validate: false, strict: false, arrival, dialect: { okStatus: 200, refuseAllInvalid: false } });
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
