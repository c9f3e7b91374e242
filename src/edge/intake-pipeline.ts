/**
 * The one intake pipeline: every request of every intake (src/intakes/) goes
 * through these steps, in the order of intake-checks.ts (auth, limits, body,
 * checks, verdict, write), and leaves by `finish`, the one exit that records
 * what became of each item (the ledger and its samples, the live view) and
 * answers, whichever step refused the request. The log line and the metrics
 * are the edge's onResponse hook (observe.ts), from the facts set here.
 *
 * Why in the edge, not the domain: it reads the body off the socket
 * (read-body.ts), holds it against the server's memory (admission.ts,
 * read-budget.ts), answers in the envelope (envelope.ts), and the live view's
 * and the ledger's records are made of the answer (live-feed.ts,
 * outcome-answers.ts): all HTTP's, so the edge is the lowest layer that may
 * import what it uses. The intakes declare and map only (intakes/intake.ts),
 * so none of this is theirs to import; the domain's part is the write
 * (Collector.ingest), reached once per request (docs/design.md, "Intakes").
 */
import ipaddr from 'ipaddr.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type BearerResult, hashKey, hashesMatch, isKeyShaped, keyWorks } from '../domain/keys.js';
import type { RateLimits } from '../domain/limits/policies.js';
import type { LiveWindow } from '../domain/live-window.js';
import type { BatchContext, CheckedBatch } from '../pipeline/checked-batch.js';
import type { CheckThreads } from '../intakes/check-threads.js';
import type { Collector } from '../domain/collector.js';
import { type ItemOutcome, type KeptOutcome, KeyNoLongerWorksError } from '../domain/ingest/job.js';
import { type IngestItem, KINDS } from '../domain/ingest/item.js';
import type { EnrichedItem } from '../domain/items/enriched-item.js';
import type { ItemError } from '../domain/items/fields/field-error.js';
import type { KeyFound } from '../pipeline/foreign-body.js';
import type { BodyEncoding, EndpointProfile, Intake, QueryOptions } from '../intakes/intake.js';
import { type AuthRecord, StoreUnavailableError } from '../stores/port.js';
import type { Admission } from './admission.js';
import { batchAnswer, dryRunAnswer } from './answers.js';
import { clientGone } from './client-gone.js';
import type { EdgeCounters } from './edge-counters.js';
import { sendRefusal } from './envelope.js';
import { feedLive } from './live-feed.js';
import { readBody, readHeld } from './read-body.js';
import { type ItemTally, emptyFacts, tallyKept, tallyRefused } from './request-facts.js';
import { planContext, recordWarnings, warningsOf } from './plan-step.js';
import type { ItemCounts } from '../domain/outcomes/ledger.js';
import { previousIdOf, recordChecked, recordWhole, sendable } from './outcome-answers.js';
import { sampleText } from '../domain/outcomes/sample-text.js';
import type { ReadBudget, ReadShare } from './read-budget.js';
import { type Refusal, checkContentType, checkEncoding, isRefusal } from './request-checks.js';

export interface IntakeDeps {
  collector: Collector;
  /** Back-pressure on bodies; one per server. */
  admission: Admission;
  /** Bounds on bodies being read; one per server. */
  reading: ReadBudget;
  /** Where bodies are parsed and checked: large ones on threads, if the server has them. */
  checks: CheckThreads;
  counters: EdgeCounters;
  limits: RateLimits;
  clock: () => number;
  trackerHosts: Set<string>;
  retiredVersions: Set<string>;
  /** The console's live view of each source's answers; none when absent. */
  live?: LiveWindow;
}

/** A request as the steps go through it: each step sets what the later ones (and the exit) read. */
export interface IntakeRequest {
  deps: IntakeDeps;
  intake: Intake;
  req: FastifyRequest;
  reply: FastifyReply;
  path: string;
  query: string;
  /** Set once the key's checks pass. */
  auth: AuthRecord | undefined;
  /** What the query asks; NO_OPTIONS until (and unless) the intake's query is read. */
  options: QueryOptions;
  /** Set once the body is read and has room; released when the request is done. */
  body: { bytes: Uint8Array; release: () => void } | undefined;
  /** Whether the key was found in the body (on a check thread): its body is checked on one too, whatever its size. */
  keyInBody: boolean;
  /** Server clock when the body was admitted: the items' arrival. */
  arrival: number;
  /** The items' verdicts, once checked; the store's refusals join them. */
  checked: CheckedBatch | undefined;
  /** The store's answer for each item written (or tried, in a dry run). */
  outcomes: ItemOutcome[] | undefined;
  /** Those of the items it kept. */
  kept: KeptOutcome[] | undefined;
}

/** How a step ends the request before its answer: its client went away, and there is no one to answer. */
export const GONE = Symbol('gone');

/** What a step leaves: passed (null), refused, or no one left to answer. */
export type Result = Refusal | null | typeof GONE;

/**
 * The one way out: what became of every item is recorded, then the request
 * is answered. A request refused whole before its items were checked counts
 * as its code says (recordWhole); one refused over its items (by the checks
 * or by the store) is counted, sampled and shown item by item as any other
 * (a dry run's is not); one taken is counted with the store's answers.
 */
export function finish(r: IntakeRequest, ending: Result): void {
  if (ending === GONE) return;
  const { deps, req, reply } = r;
  if (ending === null) return answerTaken(r);
  if (ending.code === 'strict_item_invalid' || ending.code === 'all_items_invalid') recordRefusedItems(r);
  else recordWhole(deps.collector.outcomes, req, ending.code, deps.clock());
  sendRefusal(req, reply, ending);
}

/** A request refused whole over its items: the live view is told, and the ledger counts each item (not for a dry run). */
function recordRefusedItems(r: IntakeRequest): void {
  if (r.options.validate) return;
  const { deps, req, auth } = r;
  const checked = r.checked!;
  const at = deps.clock();
  feedLive(deps.live, auth!.source.id, req.id, at, 400, { count: checked.count, refused: checked.refused, errors: checked.errors });
  const tally = req.facts!.items!;
  // The items that passed were refused with the rest: under the request's code, having none of their own.
  const passed = checked.items.length + checked.dropped.length;
  const counts = passed === 0 ? tally : { ...tally, refused: new Map([...tally.refused, ['strict_item_invalid', passed]]) };
  recordChecked(deps.collector.outcomes, req, { projectId: auth!.project.id, sourceId: auth!.source.id }, at, checked, counts, null);
}

/** A request whose items were taken (or tried, in a dry run): recorded with what the store decided, then answered as its intake answers. */
function answerTaken(r: IntakeRequest): void {
  const { deps, req, reply, auth } = r;
  const checked = r.checked!;
  const kept = r.kept!;
  if (r.options.validate) {
    reply.code(200).send({ ...dryRunAnswer(checked.items, kept, checked.dropped, checked.errors, checked.droppedKeys, req.id), ...warningsOf(r) });
    return;
  }
  const { okStatus } = r.intake.answers;
  // What the store decided (accepted, duplicate, dropped there) was counted with the write; the rest is the ledger's.
  recordChecked(deps.collector.outcomes, req, { projectId: auth!.project.id, sourceId: auth!.source.id }, r.arrival, checked, notWritten(req.facts!.items!, checked), r.outcomes!);
  feedLive(deps.live, auth!.source.id, req.id, deps.clock(), okStatus, {
    count: checked.count, refused: checked.refused, errors: checked.errors, stored: { items: checked.items, outcomes: kept }, dropped: checked.dropped,
  });
  recordWarnings(deps.collector.outcomes, r, r.arrival);
  reply.code(okStatus).send({ ...batchAnswer(kept, checked.dropped, checked.errors, req.id), ...warningsOf(r) });
}

/** The 404 of a key whose project has the batch API off: both ways to switch it on, the console's and the command line's. */
export function apiOffMessage(baseUrl: string, projectId: string): string {
  return (
    `The batch API is switched off for project ${projectId}. Switch it on with "inlet project update ${projectId} --api-enabled true", ` +
    `or in the console: ${baseUrl}/console/projects/${projectId}#settings (API enabled, then Save).`
  );
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
  const auth = await checkKey(r.deps, r.req, bearer);
  if (isRefusal(auth)) return auth;
  r.auth = auth;
  return null;
}

/** The key's checks: a key that works, of a project with the API enabled, within the per-key limit. */
export async function checkKey(deps: IntakeDeps, req: FastifyRequest, key: BearerResult): Promise<AuthRecord | Refusal> {
  let auth: AuthRecord | Refusal;
  try {
    auth = await authenticate(deps, key);
  } catch (e) {
    // The key cannot be checked while the store is away: as retryable as a failed write.
    return unavailable(req, e);
  }
  if (isRefusal(auth)) return auth;
  const facts = (req.facts ??= emptyFacts());
  facts.projectId = auth.project.id;
  facts.sourceId = auth.source.id;
  const now = deps.clock();
  deps.collector.recordKeyUse(auth.keyId, now);
  if (!auth.project.apiEnabled) {
    return { code: 'not_found', message: apiOffMessage(req.server.inletBaseUrl, auth.project.id) };
  }
  const keyVerdict = await deps.limits.checkKey(auth.keyId, now);
  if (!keyVerdict.allowed) {
    facts.limitPolicy = 'key';
    return {
      code: 'rate_limited',
      message: 'This key sent more requests per second than it may; nothing was stored. Resend after Retry-After seconds.',
      headers: { ...keyVerdict.headers, 'Retry-After': String(keyVerdict.retryAfter) },
    };
  }
  return auth;
}

/** The query's step: the intake's own parameters, if it reads any. */
export function queryStep(r: IntakeRequest): Result {
  if (r.intake.query === null) return null;
  const options = r.intake.query(r.query);
  if (isRefusal(options)) return options;
  r.options = options;
  // Known from here: a dry run's refusals are not counted as outcomes.
  r.req.facts!.dryRun = options.validate;
  return null;
}

/**
 * The body's step: read and given room, its key checked first when it is in
 * the body. Its arrival is when it was admitted.
 */
export async function readIntakeBody(r: IntakeRequest): Promise<Result> {
  const { deps, req, intake } = r;
  if (r.auth !== undefined) {
    const body = await readAdmitted(deps, req, { projectId: r.auth.project.id }, intake.anyContentType, r.options.encoding);
    if (body === null) return GONE;
    if (isRefusal(body)) return body;
    r.body = body;
  } else {
    const found = await keyInBody(r);
    if (found === null) return GONE;
    if (isRefusal(found)) return found;
    const auth = await checkKey(deps, req, found.key);
    if (isRefusal(auth)) return auth.code === 'missing_key' ? { ...auth, message: intake.key.inBody!.missingKey } : auth;
    const release = await admitBody(deps, found.json.length, { projectId: auth.project.id });
    if (isRefusal(release)) return release;
    r.auth = auth;
    r.keyInBody = true;
    r.body = { bytes: found.json, release };
  }
  r.arrival = deps.clock();
  return null;
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
  const raw = await readHeld(req.raw, (bytes) => deps.reading.reserve(share, bytes));
  if (isRefusal(raw)) return raw;
  if ('gone' in raw) {
    clientGone(req, deps.counters);
    return null;
  }
  try {
    // An intake that names the compression elsewhere (PostHog's query) decompresses once, whichever said so.
    return await deps.checks.findKey(raw.bytes, (r.options.encoding ?? header) === 'gzip', r.intake.wire!.shape(r.path), share.address);
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
  const { deps, req, reply, intake } = r;
  const auth = r.auth!;
  const profile = intake.profile(r.path);
  // Counted when the limits see it, which may be after a wait for a check thread: a limiter's clock only moves on.
  const admit = (count: number) => admitItems(deps, req, reply, auth, count, deps.clock(), profile);
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
  const updated = await writeUpdates(deps, req, auth, checked.updates, r.arrival);
  if (updated !== null) return updated;
  r.checked = checked.batch;
  return null;
}

/** A batch's items counted against its project's windows; a refusal when one is full. */
export async function admitItems(
  deps: IntakeDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  auth: AuthRecord,
  count: number,
  at: number,
  profile: EndpointProfile,
): Promise<Refusal | null> {
  req.facts!.itemCount = count;
  const verdict = await deps.limits.checkItems(auth.project.id, count, at, profile.windows);
  reply.headers(verdict.headers);
  if (verdict.allowed) return null;
  const window = profile.windows === 'import' ? 'import' : verdict.retryAfter === 60 ? 'sustained' : 'burst';
  req.facts!.limitPolicy = window;
  return {
    code: 'rate_limited',
    message: `This project sent more items than its ${window} limit allows; nothing was stored. Resend after Retry-After seconds.`,
    headers: { 'Retry-After': String(verdict.retryAfter) },
  };
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

/**
 * The person updates of the messages kept, written before the messages and
 * not counted (a message is counted once, as its event): if they fail, the
 * request is answered 503 and resent whole, when each update, whose insert_id
 * is derived from its event's, is a repeat.
 */
async function writeUpdates(deps: IntakeDeps, req: FastifyRequest, auth: AuthRecord, updates: EnrichedItem[], arrival: number): Promise<Refusal | null> {
  if (updates.length === 0) return null;
  try {
    await deps.collector.ingest({ projectId: auth.project.id, sourceId: auth.source.id, keyId: auth.keyId, receivedAt: arrival, items: updates, dryRun: false, counted: false });
    return null;
  } catch (e) {
    if (e instanceof KeyNoLongerWorksError) return { code: 'invalid_key' };
    return unavailable(req, e);
  }
}

/** The item checks' verdict on a request: refused whole with strict=true and any invalid item, or with no item kept where the intake refuses that. */
export function itemsVerdict(r: IntakeRequest): Result {
  const checked = r.checked!;
  r.req.facts!.items = tallyRefused(checked.errors);
  if (r.options.strict && checked.errors.length > 0) return refuseItems(checked, 'strict_item_invalid');
  if (checked.items.length + checked.dropped.length === 0 && !r.options.validate && r.intake.answers.refuseAllInvalid) {
    return refuseItems(checked, 'all_items_invalid');
  }
  return null;
}

/** A request refused whole over its items, by the checks or by the store: `finish` records each item's fate. */
function refuseItems(checked: CheckedBatch, code: 'strict_item_invalid' | 'all_items_invalid'): Refusal {
  return { code, errors: checked.errors };
}

/** The durable write of the items the verdict let through (tried only, in a dry run); the answer is finish's. */
export async function writeChecked(r: IntakeRequest): Promise<Result> {
  const { deps, req, options } = r;
  const auth = r.auth!;
  const checked = r.checked!;
  const ingest = (dryRun: boolean) =>
    deps.collector.ingest({ projectId: auth.project.id, sourceId: auth.source.id, keyId: auth.keyId, receivedAt: r.arrival, items: checked.items, dryRun });
  let outcomes: ItemOutcome[];
  try {
    // Only the store can refuse a group (a sixth type) or an alias (an illegal merge): with
    // strict=true such a request is tried first, so that all or nothing still holds. A type
    // added by another server between the two is the one case left to the write.
    if (options.strict && !options.validate && checked.items.some(refusableByStore)) {
      const tried = await ingest(true);
      if (tried.some((o) => o.status === 'refused')) {
        keptOrRefused(tried, checked, req.facts!.items!);
        return refuseItems(checked, 'strict_item_invalid');
      }
    }
    outcomes = checked.items.length === 0 ? [] : await ingest(options.validate);
  } catch (e) {
    // The key was revoked (or its source, project or org deleted) while the body was read.
    if (e instanceof KeyNoLongerWorksError) return { code: 'invalid_key' };
    return unavailable(req, e);
  }
  const refusedByChecks = checked.errors.length;
  const kept = keptOrRefused(outcomes, checked, req.facts!.items!);
  // A dry run with strict=true is refused as the batch it tries would be.
  if (options.strict && options.validate && checked.errors.length > refusedByChecks) return refuseItems(checked, 'strict_item_invalid');
  // Every item refused, some by the store (a sixth group type, an illegal merge): as if the checks had refused them all.
  if (!options.validate && r.intake.answers.refuseAllInvalid && kept.length + checked.dropped.length === 0) {
    return refuseItems(checked, 'all_items_invalid');
  }
  tallyKept(req.facts!.items!, kept, checked.dropped);
  req.facts!.dryRun = options.validate;
  r.outcomes = outcomes;
  r.kept = kept;
  return null;
}

/** The counts of a written request that its write did not count: items refused, and dropped before the store. */
function notWritten(tally: ItemTally, checked: CheckedBatch): ItemCounts {
  if (checked.dropped.length === 0) return { accepted: 0, duplicate: 0, dropped: NONE, refused: tally.refused };
  const dropped = new Map<string, number>();
  for (const d of checked.dropped) dropped.set(d.reason, (dropped.get(d.reason) ?? 0) + 1);
  return { accepted: 0, duplicate: 0, dropped, refused: tally.refused };
}

const NONE: ReadonlyMap<string, number> = new Map();

/** Whether the store may refuse the item, on what the project holds. */
function refusableByStore(item: IngestItem): boolean {
  return KINDS[item.type].storeRefuses.length > 0;
}

/**
 * The outcomes of the items the store kept; those it refused (decided on what
 * the project holds, such as a sixth group type) join the item errors, in
 * index order, as if the checks had refused them, and are counted so.
 */
function keptOrRefused(outcomes: ItemOutcome[], checked: CheckedBatch, tally: ItemTally): KeptOutcome[] {
  const kept: KeptOutcome[] = [];
  const refused: ItemError[] = [];
  for (const o of outcomes) {
    if (o.status !== 'refused') kept.push(o);
    else refused.push({ index: o.index, code: o.code, field: o.field, message: o.message });
  }
  if (refused.length === 0) return kept;
  for (const e of refused) tally.refused.set(e.code, (tally.refused.get(e.code) ?? 0) + 1);
  const gone = new Set(refused.map((e) => e.index));
  checked.errors = [...checked.errors, ...refused].sort((a, b) => a.index - b.index);
  // The live view names each refused item by its event and distinct_id; these items had passed the checks, so both are theirs.
  const named = checked.items
    .filter((i) => gone.has(i.index))
    .map((i) => ({ index: i.index, event: i.event, distinctId: i.distinctId, sample: { text: sampleText(sendable(i)), distinctId: i.distinctId, anonymousId: i.anonymousId, previousId: previousIdOf(i) } }));
  checked.refused = [...checked.refused, ...named].sort((a, b) => a.index - b.index);
  checked.items = checked.items.filter((i) => !gone.has(i.index));
  return kept;
}

/** A store failure answered as 503 collection_unavailable; anything else is a bug and propagates. */
export function unavailable(req: FastifyRequest, e: unknown): Refusal {
  if (!(e instanceof StoreUnavailableError)) throw e;
  req.log.error({ err: e.cause ?? e }, 'store unavailable');
  return { code: 'collection_unavailable' };
}

/** A Bearer key that exists and still works, with its source, project and org alive. */
async function authenticate(deps: IntakeDeps, bearer: BearerResult): Promise<AuthRecord | Refusal> {
  if (bearer.kind === 'missing') return { code: 'missing_key' };
  const invalid: Refusal = { code: 'invalid_key' };
  if (!isKeyShaped(bearer.token)) return invalid;
  const hash = hashKey(bearer.token);
  const auth = await deps.collector.authenticate(hash);
  if (auth === null || !hashesMatch(auth.hash, hash) || !keyWorks(auth, deps.clock())) return invalid;
  return auth;
}
