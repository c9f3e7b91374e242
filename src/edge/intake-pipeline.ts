/**
 * The one intake pipeline, as HTTP carries it: every request of every intake
 * (src/intakes/) goes through these steps, in the order of intake-checks.ts
 * (auth, limits, body, checks, verdict, write), and leaves by `finish`, the
 * one exit, which has what became of each item recorded (`settle`) and
 * answers, whichever step refused the request. The rules (whose key, the
 * limits, the verdict, the write, the ledger and the live view) are the
 * domain's (domain/intake/run.ts), on a run that knows nothing of HTTP; what
 * is here reads the body off the socket (read-body.ts), holds it against the
 * server's memory (admission.ts, read-budget.ts) and answers in the envelope
 * or the intake's shape. The log line and the metrics are the edge's
 * onResponse hook (observe.ts), from the facts the run sets.
 */
import ipaddr from 'ipaddr.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { BearerResult } from '../domain/keys.js';
import type { BatchContext } from '../pipeline/checked-batch.js';
import type { CheckedBatch } from '../domain/intake/checked.js';
import type { CheckThreads } from '../intakes/check-threads.js';
import type { KeyFound } from '../pipeline/foreign-body.js';
import type { AnswerTarget, BodyEncoding, EndpointProfile, Intake, QueryOptions } from '../intakes/intake.js';
import { intakeNamed } from '../intakes/registry.js';
import type { AuthRecord } from '../stores/port.js';
import { type IntakeRun, type RunDeps, type RunRequest, admitItems, admitKey, settle, writeUpdates } from '../domain/intake/run.js';
import { planContext, warningsOf } from '../domain/intake/plan.js';
import type { Admission } from './admission.js';
import { batchAnswer, dryRunAnswer } from './answers.js';
import { clientGone } from './client-gone.js';
import type { EdgeCounters } from './edge-counters.js';
import { sendRefusal } from './envelope.js';
import { readBody, readHeld } from './read-body.js';
import type { ReadBudget, ReadShare } from './read-budget.js';
import { type Refusal, checkContentType, checkEncoding, isRefusal } from './request-checks.js';

export interface IntakeDeps extends RunDeps {
  /** Back-pressure on bodies; one per server. */
  admission: Admission;
  /** Bounds on bodies being read; one per server. */
  reading: ReadBudget;
  /** Where bodies are parsed and checked: large ones on threads, if the server has them. */
  checks: CheckThreads;
  counters: EdgeCounters;
  trackerHosts: Set<string>;
  retiredVersions: Set<string>;
}

/** A request as the steps go through it: the domain's run, and what HTTP adds to it. */
export interface IntakeRequest extends IntakeRun {
  deps: IntakeDeps;
  intake: Intake;
  req: FastifyRequest;
  reply: FastifyReply;
  path: string;
  query: string;
  /** What the query asks; NO_OPTIONS until (and unless) the intake's query is read. */
  options: QueryOptions;
  /** Set once the body is read and has room; released when the request is done. */
  body: { bytes: Uint8Array; release: () => void } | undefined;
  /** Whether the key was found in the body (on a check thread): its body is checked on one too, whatever its size. */
  keyInBody: boolean;
}

/** What the domain's rules may ask of a Fastify request. */
export function runRequest(req: FastifyRequest, reply: FastifyReply): RunRequest {
  return {
    id: req.id,
    baseUrl: req.server.inletBaseUrl,
    setHeaders: (headers) => reply.headers(headers),
    storeFailed: (err) => req.log.error({ err }, 'store unavailable'),
  };
}

/** How a step ends the request before its answer: its client went away, and there is no one to answer. */
export const GONE = Symbol('gone');

/** What a step leaves: passed (null), refused, or no one left to answer. */
export type Result = Refusal | null | typeof GONE;

/**
 * The one way out: what became of every item is recorded (`settle`, the
 * domain's), then the request is answered, as its intake answers when its
 * items were taken, else in the envelope (or the intake's own shape, if it
 * has one, for a refusal too).
 */
export function finish(r: IntakeRequest, ending: Result): void {
  if (ending === GONE) return;
  settle(r, ending);
  const shape = r.intake.answers.shape;
  if (ending !== null) return sendRefusal(r.req, r.reply, ending, shape === undefined ? undefined : (whole) => shape.refused(whole, answerTarget(r)));
  const checked = r.checked!;
  const kept = r.kept!;
  if (r.options.validate) {
    r.reply.code(200).send({ ...dryRunAnswer(checked.items, kept, checked.dropped, checked.errors, checked.droppedKeys, r.req.id), ...warningsOf(r) });
    return;
  }
  if (shape === undefined) {
    r.reply.code(r.intake.answers.okStatus).send({ ...batchAnswer(kept, checked.dropped, checked.errors, r.req.id), ...warningsOf(r) });
    return;
  }
  // Stored now or before: an item the store dropped (the monthly limit's collection_paused) is not among them.
  // An intake answering in its own API's shape has no place for warnings: they are counted and kept all the same.
  const stored = kept.filter((o) => o.status !== 'dropped').length;
  const answer = shape.taken({ count: checked.count, kept: stored, errors: checked.errors, insertIds: refusedInsertIds(checked), bytes: r.body!.bytes.length }, answerTarget(r));
  r.reply.code(answer.status).send(answer.body);
}

/** The request as an intake's own answers read it. */
function answerTarget(r: IntakeRequest): AnswerTarget {
  return { method: r.req.method, path: r.path, query: r.query, contentType: r.req.headers['content-type'] };
}

/** The insert_id each refused item sent, by its index (an intake's own answer may name it). */
function refusedInsertIds(checked: CheckedBatch): Map<number, string> {
  const ids = new Map<number, string>();
  for (const i of checked.refused) if (i.insertId !== undefined && i.insertId !== null) ids.set(i.index, i.insertId);
  return ids;
}

/**
 * The key's step, as the intake reads its header: a key that works, of a
 * project with the API enabled, within the per-key limit. An intake whose
 * key may be in the body looks for it there when the header has none
 * (readIntakeBody); such a request waits on nothing here.
 */
export function keyStep(r: IntakeRequest): Result | Promise<Result> {
  const bearer = r.intake.key.header(r.req.headers.authorization);
  if (bearer.kind !== 'token' && r.intake.key.inBody !== null) return null;
  return keyChecked(r, bearer);
}

async function keyChecked(r: IntakeRequest, bearer: BearerResult): Promise<Result> {
  const auth = await admitKey(r, bearer);
  if (isRefusal(auth)) return auth;
  r.auth = auth;
  return null;
}

/** The query's step: the intake's own parameters, if it reads any. */
export function queryStep(r: IntakeRequest): Result {
  if (r.intake.query === null) return null;
  const options = r.intake.query(r.query);
  if (isRefusal(options)) return options;
  r.options = options;
  // Known from here: a dry run's refusals are not counted as outcomes.
  r.facts.dryRun = options.validate;
  return null;
}

/**
 * The body's step: read and given room, its key checked first when it is in
 * the body. Its arrival is when it was admitted.
 */
export async function readIntakeBody(r: IntakeRequest): Promise<Result> {
  const { deps, req, intake } = r;
  if (r.auth !== undefined) {
    const share = { projectId: r.auth.project.id };
    const body = dataInQuery(r) ? await admitQuery(deps, r.query, share) : await readAdmitted(deps, req, share, intake.anyContentType, r.options.encoding);
    if (body === null) return GONE;
    if (isRefusal(body)) return body;
    r.body = body;
  } else {
    const found = await keyInBody(r);
    if (found === null) return GONE;
    if (isRefusal(found)) return found;
    // A body another intake claims at this path (Amplitude's batch API at /batch) is that intake's from here on.
    if (found.intake !== undefined) {
      const other = intakeNamed(found.intake);
      if (other?.claims?.path === r.path) r.intake = other;
    }
    const auth = await admitKey(r, found.key);
    if (isRefusal(auth)) return auth.code === 'missing_key' ? { ...auth, message: r.intake.key.inBody!.missingKey } : auth;
    const release = await admitBody(deps, found.json.length, { projectId: auth.project.id });
    if (isRefusal(release)) return release;
    r.auth = auth;
    r.keyInBody = true;
    r.body = { bytes: found.json, release };
  }
  r.arrival = deps.clock();
  return null;
}

/** Whether the request's data is its query (a GET to an intake that reads it so): there is no body to read. */
function dataInQuery(r: IntakeRequest): boolean {
  return r.intake.queryAsBody === true && r.req.method === 'GET';
}

/** A query read as the body: given room as a body is. */
async function admitQuery(deps: IntakeDeps, query: string, share: ReadShare): Promise<{ bytes: Buffer; release: () => void } | Refusal> {
  const bytes = Buffer.from(query, 'latin1');
  const release = await admitBody(deps, bytes.length, share);
  return isRefusal(release) ? release : { bytes, release };
}

/**
 * The body's checks before it is parsed (Content-Type unless any is taken,
 * Content-Encoding, its size, room to read it, then room to hold it): the
 * body, decompressed, once there is room for it, counted against `share` in
 * both budgets. The caller parses it and calls release() when done. Null when
 * the client went away: there is no one to answer.
 */
export async function readAdmitted(
  deps: IntakeDeps,
  req: FastifyRequest,
  share: ReadShare,
  anyContentType: boolean,
  encoding: BodyEncoding | undefined,
): Promise<{ bytes: Buffer; release: () => void } | Refusal | null> {
  const contentType = anyContentType ? null : checkContentType(req.headers['content-type']);
  if (contentType !== null) return contentType;
  const header = checkEncoding(req.headers['content-encoding']);
  if (isRefusal(header)) return header;

  // An intake that names the compression elsewhere (PostHog's query) decompresses once, whichever said so.
  const body = await readBody(req.raw, encoding ?? header, (bytes) => deps.reading.reserve(share, bytes));
  if (isRefusal(body)) return body;
  if ('gone' in body) {
    clientGone(req, deps.counters);
    return null;
  }
  const release = await admitBody(deps, body.bytes.length, share);
  return isRefusal(release) ? release : { bytes: body.bytes, release };
}

/** Room in Admission for a body read (`bytes` of JSON, decompressed), counted against `share`: its release, once there is room, or a refusal. */
export async function admitBody(deps: IntakeDeps, bytes: number, share: ReadShare): Promise<(() => void) | Refusal> {
  const release = await deps.admission.enter(bytes, 'projectId' in share ? share.projectId : `addr:${share.address}`);
  if (release !== null) return release;
  return {
    code: 'collection_unavailable',
    message: 'This server has more batches in hand than it can store right now; nothing was stored. Resend after Retry-After seconds.',
  };
}

/**
 * The key of a body whose key, if any, is inside it, found on a check thread:
 * anyone can send such a body, so the main thread neither decompresses nor
 * parses it. It is read in the keyless pool under its client's address, and
 * holds its room there until its key is found; null when the client went away.
 */
async function keyInBody(r: IntakeRequest): Promise<KeyFound | Refusal | null> {
  const { deps, req } = r;
  const header = checkEncoding(req.headers['content-encoding']);
  if (isRefusal(header)) return header;
  const share = keyInBodyShare(req.ip);
  const shape = r.intake.wire!.shape(r.path);
  if (dataInQuery(r)) return deps.checks.findKey(Buffer.from(r.query, 'latin1'), false, shape, share.address);
  const raw = await readHeld(req.raw, (bytes) => deps.reading.reserve(share, bytes));
  if (isRefusal(raw)) return raw;
  if ('gone' in raw) {
    clientGone(req, deps.counters);
    return null;
  }
  try {
    // An intake that names the compression elsewhere (PostHog's query) decompresses once, whichever said so.
    return await deps.checks.findKey(raw.bytes, (r.options.encoding ?? header) === 'gzip', shape, share.address);
  } finally {
    raw.release();
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

/**
 * The items' step: the body parsed, shaped (an intake in another API's shape
 * maps it, one item a message) and counted against the project's windows,
 * then each item checked and enriched, on a check thread for a large body.
 * The person updates some messages carry are written here, before them.
 */
export async function checkIntakeItems(r: IntakeRequest): Promise<Result> {
  const { deps, intake } = r;
  const auth = r.auth!;
  const profile = intake.profile(r.path);
  // Counted when the limits see it, which may be after a wait for a check thread: a limiter's clock only moves on.
  const admit = (count: number) => admitItems(r, count, deps.clock(), profile.windows);
  const ctx = itemContext(auth, r.arrival, profile);
  const plan = planContext(r);
  if (plan !== undefined) ctx.plan = plan;
  if (intake.wire === null) {
    const checked = await deps.checks.check(r.body!.bytes, ctx, admit);
    if (isRefusal(checked)) return checked;
    r.checked = checked;
    return null;
  }
  const checked = await deps.checks.checkMessages(r.body!.bytes, intake.wire.shape(r.path), ctx, admit, r.keyInBody);
  if (isRefusal(checked)) return checked;
  const updated = await writeUpdates(r, checked.updates, checked.batch);
  if (updated !== null) return updated;
  r.checked = checked.batch;
  return null;
}

/** What the item checks need to know of a request: when it came, and its source's and endpoint's rules. */
export function itemContext(auth: AuthRecord, arrival: number, profile: EndpointProfile, ownEvents?: ReadonlySet<number>): BatchContext {
  const { source } = auth;
  return {
    now: arrival,
    recordIp: source.recordIp,
    ownEvents,
    importing: profile.importWindow(auth.project),
    source: { id: source.id, filterBots: source.filterBots },
  };
}
