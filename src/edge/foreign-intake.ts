/**
 * The steps an intake that speaks another API's shape (Segment's, PostHog's)
 * takes once its path, method and browser checks passed: the batch
 * endpoint's own, in its order, with a key that may be inside the body.
 */
import ipaddr from 'ipaddr.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { KeyNoLongerWorksError } from '../domain/ingest/job.js';
import type { EnrichedItem } from '../pipeline/enriched-item.js';
import type { ForeignShape, KeyFound } from '../pipeline/foreign-body.js';
import type { AuthRecord } from '../stores/port.js';
import { type BatchRouteDeps, type Dialect, admitBody, admitItems, checkKey, ingestChecked, itemContext, readAdmitted, unavailable } from './batch-route.js';
import { clientGone } from './client-gone.js';
import { BATCH_PATH, ENDPOINTS } from './endpoints.js';
import type { ReadShare } from './read-budget.js';
import { readHeld } from './read-body.js';
import { type BodyEncoding, type Refusal, checkEncoding, isRefusal } from './request-checks.js';

/** What an intake says of its own shape. */
export interface ForeignIntake {
  /** How its bodies are read: what a check thread needs to know of them. */
  shape: ForeignShape;
  /** The message of a missing_key: every way this intake takes a key. */
  missingKey: string;
  /** The body's compression when the intake names it elsewhere than Content-Encoding. */
  encoding?: BodyEncoding;
}

/** Answers as the SDKs of such APIs expect: a 200 with the batch answer, even when every item was refused (they take any 2xx as delivered and log the rest as failures). */
const FOREIGN_DIALECT: Dialect = { okStatus: 200, refuseAllInvalid: false };

/**
 * Finds the key (in a header: checked already, as `early`; else in the body,
 * on a check thread), maps the messages to items and takes them through the
 * limits, the item checks and the write, one item a message.
 */
export async function ingestForeign(
  deps: BatchRouteDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  early: AuthRecord | null,
  intake: ForeignIntake,
): Promise<Refusal | null> {
  if (early !== null) {
    // Their SDKs may send a gzip body without a Content-Type: the JSON check decides.
    const body = await readAdmitted(deps, req, { projectId: early.project.id }, { anyContentType: true, encoding: intake.encoding });
    if (body === null || isRefusal(body)) return body;
    try {
      return await ingestMessages(deps, req, reply, early, body.bytes, intake.shape, false);
    } finally {
      body.release();
    }
  }
  const found = await keyInBody(deps, req, intake);
  if (found === null || isRefusal(found)) return found;
  const auth = await checkKey(deps, req, found.key);
  if (isRefusal(auth)) return auth.code === 'missing_key' ? { ...auth, message: intake.missingKey } : auth;
  const release = await admitBody(deps, found.json.length, { projectId: auth.project.id });
  if (isRefusal(release)) return release;
  try {
    return await ingestMessages(deps, req, reply, auth, found.json, intake.shape, true);
  } finally {
    release();
  }
}

/**
 * The key of a body whose key, if any, is inside it, found on a check thread:
 * anyone can send such a body, so the main thread neither decompresses nor
 * parses it. It is read in the keyless pool under its client's address, and
 * holds its room there until its key is found; null when the client went away.
 */
async function keyInBody(deps: BatchRouteDeps, req: FastifyRequest, intake: ForeignIntake): Promise<KeyFound | Refusal | null> {
  const header = checkEncoding(req.headers['content-encoding']);
  if (isRefusal(header)) return header;
  const share = keyInBodyShare(req.ip);
  const raw = await readHeld(req.raw, (bytes) => deps.reading.reserve(share, bytes));
  if (isRefusal(raw)) return raw;
  if ('gone' in raw) {
    clientGone(req, deps.counters);
    return null;
  }
  try {
    // An intake that names the compression elsewhere (PostHog's query) decompresses once, whichever said so.
    return await deps.checks.findKey(raw.bytes, (intake.encoding ?? header) === 'gzip', intake.shape, share.address);
  } finally {
    raw.release();
  }
}

/** The messages of a body admitted, its key checked: the project's limits (one item a message), the checks, the writes and the answer. */
async function ingestMessages(
  deps: BatchRouteDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  auth: AuthRecord,
  json: Uint8Array,
  shape: ForeignShape,
  keyWasInBody: boolean,
): Promise<Refusal | null> {
  const arrival = deps.clock();
  const profile = ENDPOINTS.get(BATCH_PATH)!;
  // Counted when the limits see it, which may be after a wait for a check thread: a limiter's clock only moves on.
  const admit = (count: number) => admitItems(deps, req, reply, auth, count, deps.clock(), profile);
  const checked = await deps.checks.checkMessages(json, shape, itemContext(auth, arrival, profile), admit, keyWasInBody);
  if (isRefusal(checked)) return checked;
  const updated = await writeUpdates(deps, req, auth, checked.updates, arrival);
  if (updated !== null) return updated;
  return ingestChecked(deps, req, reply, auth, checked.batch, { validate: false, strict: false, arrival, dialect: FOREIGN_DIALECT });
}

/**
 * The person updates of the messages kept, written before the messages and
 * not counted (a message is counted once, as its event): if they fail, the
 * request is answered 503 and resent whole, when each update, whose insert_id
 * is derived from its event's, is a repeat.
 */
async function writeUpdates(deps: BatchRouteDeps, req: FastifyRequest, auth: AuthRecord, updates: EnrichedItem[], arrival: number): Promise<Refusal | null> {
  if (updates.length === 0) return null;
  try {
    await deps.collector.ingest({ projectId: auth.project.id, sourceId: auth.source.id, keyId: auth.keyId, receivedAt: arrival, items: updates, dryRun: false, counted: false });
    return null;
  } catch (e) {
    if (e instanceof KeyNoLongerWorksError) return { code: 'invalid_key' };
    return unavailable(req, e);
  }
}

/**
 * The read-budget share of a body whose key, if any, is inside it: its
 * client's address within the keyless pool (as a trusted proxy names it, if
 * any; an IPv4 address the same whether it came over IPv4 or as IPv4-mapped
 * IPv6; an IPv6 client by its /64, which one host is given whole and could
 * otherwise spread over as many shares as it likes). One share for all such
 * bodies would let anyone without a key hold it and lock out every client
 * sending its key this way.
 */
export function keyInBodyShare(remoteAddress: string | undefined): Extract<ReadShare, { address: string }> {
  const addr = remoteAddress ?? 'unknown';
  if (!ipaddr.isValid(addr)) return { address: addr };
  const ip = ipaddr.process(addr);
  if (ip.kind() === 'ipv4') return { address: ip.toString() };
  const parts = (ip as ipaddr.IPv6).parts;
  return { address: `${parts.slice(0, 4).map((p) => p.toString(16)).join(':')}::/64` };
}
