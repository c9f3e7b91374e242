/**
 * The pieces the batch API's checks are made of, shared with the Segment
 * and PostHog intakes (segment-route.ts, posthog-route.ts); their order is
 * the list in batch-checks.ts.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type BearerResult, hashKey, hashesMatch, isKeyShaped, keyWorks } from '../domain/keys.js';
import type { RateLimits } from '../domain/limits/policies.js';
import type { LiveWindow } from '../domain/live-window.js';
import type { BatchContext, CheckedBatch } from '../pipeline/checked-batch.js';
import type { CheckThreads } from '../pipeline/check-threads.js';
import type { Collector } from '../domain/collector.js';
import { type ItemOutcome, type KeptOutcome, KeyNoLongerWorksError } from '../domain/ingest/job.js';
import { type IngestItem, KINDS } from '../domain/ingest/item.js';
import type { ItemError } from '../pipeline/field-error.js';
import { type AuthRecord, StoreUnavailableError } from '../stores/port.js';
import type { Admission } from './admission.js';
import { batchAnswer, dryRunAnswer } from './answers.js';
import { clientGone } from './client-gone.js';
import type { EdgeCounters } from './edge-counters.js';
import { sendRefusal } from './envelope.js';
import { feedLive } from './live-feed.js';
import { readBody } from './read-body.js';
import type { EndpointProfile } from './endpoints.js';
import { type ItemTally, emptyFacts, tallyKept, tallyRefused } from './request-facts.js';
import type { ItemCounts } from '../domain/outcomes/ledger.js';
import { previousIdOf, recordChecked, recordWhole, sendable } from './outcome-answers.js';
import { sampleText } from '../domain/outcomes/sample-text.js';
import type { ReadBudget, ReadShare } from './read-budget.js';
import { type BatchOptions, type BodyEncoding, type Refusal, checkContentType, checkEncoding, isRefusal } from './request-checks.js';

export interface BatchRouteDeps {
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

/** A route handler that answers the refusal its steps end with, if any, in the envelope. */
export function answering(
  deps: BatchRouteDeps,
  steps: (deps: BatchRouteDeps, req: FastifyRequest, reply: FastifyReply) => Promise<Refusal | null>,
) {
  return async function handle(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    const refusal = await steps(deps, req, reply);
    if (refusal === null) return;
    recordWhole(deps.collector.outcomes, req, refusal.code, deps.clock());
    sendRefusal(req, reply, refusal);
  };
}

/** The 404 of a key whose project has the batch API off: both ways to switch it on, the console's and the command line's. */
export function apiOffMessage(baseUrl: string, projectId: string): string {
  return (
    `The batch API is switched off for project ${projectId}. Switch it on with "inlet project update ${projectId} --api-enabled true", ` +
    `or in the console: ${baseUrl}/console/projects/${projectId}#settings (API enabled, then Save).`
  );
}

/** The key's checks: a key that works, of a project with the API enabled, within the per-key limit. */
export async function checkKey(deps: BatchRouteDeps, req: FastifyRequest, key: BearerResult): Promise<AuthRecord | Refusal> {
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

/**
 * The body's checks before it is parsed (Content-Type, Content-Encoding, its
 * size, room to read it, then room to hold it): the body, decompressed, once there
 * is room for it, counted against `share` in both budgets. The caller
 * parses it and calls release() when done. Null when the client went away:
 * there is no one to answer.
 */
export async function readAdmitted(
  deps: BatchRouteDeps,
  req: FastifyRequest,
  share: ReadShare,
  opts: { anyContentType?: boolean; encoding?: BodyEncoding } = {},
): Promise<{ bytes: Buffer; release: () => void } | Refusal | null> {
  const contentType = opts.anyContentType ? null : checkContentType(req.headers['content-type']);
  if (contentType !== null) return contentType;
  const header = checkEncoding(req.headers['content-encoding']);
  if (isRefusal(header)) return header;
  // An intake that names the compression elsewhere (PostHog's query) decompresses once, whichever said so.
  const encoding = opts.encoding ?? header;

  const body = await readBody(req.raw, encoding, (bytes) => deps.reading.reserve(share, bytes));
  if (isRefusal(body)) return body;
  if ('gone' in body) {
    clientGone(req, deps.counters);
    return null;
  }
  const release = await admitBody(deps, body.bytes.length, share);
  return isRefusal(release) ? release : { bytes: body.bytes, release };
}

/** Room in Admission for a body read (`bytes` of JSON, decompressed), counted against `share`: its release, once there is room, or a refusal. */
export async function admitBody(deps: BatchRouteDeps, bytes: number, share: ReadShare): Promise<(() => void) | Refusal> {
  const release = await deps.admission.enter(bytes, 'projectId' in share ? share.projectId : `addr:${share.address}`);
  if (release !== null) return release;
  return {
    code: 'collection_unavailable',
    message: 'This server has more batches in hand than it can store right now; nothing was stored. Resend after Retry-After seconds.',
  };
}

/** A batch's items counted against its project's windows; a refusal when one is full. */
export async function admitItems(
  deps: BatchRouteDeps,
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

/** How an intake answers: the batch API, or an intake that speaks another API's dialect. */
export interface Dialect {
  /** Status of a request that was taken (some items may be refused). */
  okStatus: 200 | 202;
  /** Whether a request in which no item could be kept is refused whole (400 all_items_invalid). */
  refuseAllInvalid: boolean;
}

export const BATCH_DIALECT: Dialect = { okStatus: 202, refuseAllInvalid: true };

/** The item checks' verdict, then the durable write and the answer, for the checked items of an admitted body. */
export async function ingestChecked(
  deps: BatchRouteDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  auth: AuthRecord,
  checked: CheckedBatch,
  options: BatchOptions & { arrival: number; dialect: Dialect },
): Promise<Refusal | null> {
  return itemsVerdict(deps, req, auth, checked, options.strict, options.validate, options.dialect) ?? writeChecked(deps, req, reply, auth, checked, options);
}

/** The item checks' verdict on a request: refused whole with strict=true and any invalid item, or with no item kept. */
export function itemsVerdict(
  deps: BatchRouteDeps,
  req: FastifyRequest,
  auth: AuthRecord,
  checked: CheckedBatch,
  strict: boolean,
  validate: boolean,
  dialect: Dialect,
): Refusal | null {
  req.facts!.items = tallyRefused(checked.errors);
  if (strict && checked.errors.length > 0) return refuseItems(deps, req, auth, checked, 'strict_item_invalid', validate);
  if (checked.items.length + checked.dropped.length === 0 && !validate && dialect.refuseAllInvalid) {
    return refuseItems(deps, req, auth, checked, 'all_items_invalid', validate);
  }
  return null;
}

/**
 * A request refused whole over its items, by the checks or by the store: the
 * one way out for both codes, so each such answer is told to the live view
 * and counted (a dry run's is not) as every other answer is.
 */
function refuseItems(
  deps: BatchRouteDeps,
  req: FastifyRequest,
  auth: AuthRecord,
  checked: CheckedBatch,
  code: 'strict_item_invalid' | 'all_items_invalid',
  validate: boolean,
): Refusal {
  if (!validate) {
    const at = deps.clock();
    feedLive(deps.live, auth.source.id, req.id, at, 400, { count: checked.count, refused: checked.refused, errors: checked.errors });
    const tally = req.facts!.items!;
    // The items that passed were refused with the rest: under the request's code, having none of their own.
    const passed = checked.items.length + checked.dropped.length;
    const counts = passed === 0 ? tally : { ...tally, refused: new Map([...tally.refused, ['strict_item_invalid', passed]]) };
    recordChecked(deps.collector.outcomes, req, { projectId: auth.project.id, sourceId: auth.source.id }, at, checked, counts, null);
  }
  return { code, errors: checked.errors };
}

/** The durable write of the items the verdict let through, and the answer. */
export async function writeChecked(
  deps: BatchRouteDeps,
  req: FastifyRequest,
  reply: FastifyReply,
  auth: AuthRecord,
  checked: CheckedBatch,
  options: BatchOptions & { arrival: number; dialect: Dialect },
): Promise<Refusal | null> {
  const { dialect, arrival } = options;
  const ingest = (dryRun: boolean) =>
    deps.collector.ingest({ projectId: auth.project.id, sourceId: auth.source.id, keyId: auth.keyId, receivedAt: arrival, items: checked.items, dryRun });
  let outcomes: ItemOutcome[];
  try {
    // Only the store can refuse a group (a sixth type) or an alias (an illegal merge): with
    // strict=true such a request is tried first, so that all or nothing still holds. A type
    // added by another server between the two is the one case left to the write.
    if (options.strict && !options.validate && checked.items.some(refusableByStore)) {
      const tried = await ingest(true);
      if (tried.some((o) => o.status === 'refused')) {
        keptOrRefused(tried, checked, req.facts!.items!);
        return refuseItems(deps, req, auth, checked, 'strict_item_invalid', false);
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
  if (options.strict && options.validate && checked.errors.length > refusedByChecks) return refuseItems(deps, req, auth, checked, 'strict_item_invalid', true);
  // Every item refused, some by the store (a sixth group type, an illegal merge): as if the checks had refused them all.
  if (!options.validate && dialect.refuseAllInvalid && kept.length + checked.dropped.length === 0) {
    return refuseItems(deps, req, auth, checked, 'all_items_invalid', false);
  }
  tallyKept(req.facts!.items!, kept, checked.dropped);
  req.facts!.dryRun = options.validate;
  if (options.validate) {
    reply.code(200).send(dryRunAnswer(checked.items, kept, checked.dropped, checked.errors, checked.droppedKeys, req.id));
  } else {
    // What the store decided (accepted, duplicate, dropped there) was counted with the write; the rest is the ledger's.
    recordChecked(deps.collector.outcomes, req, { projectId: auth.project.id, sourceId: auth.source.id }, arrival, checked, notWritten(req.facts!.items!, checked), outcomes);
    feedLive(deps.live, auth.source.id, req.id, deps.clock(), dialect.okStatus, {
      count: checked.count, refused: checked.refused, errors: checked.errors, stored: { items: checked.items, outcomes: kept }, dropped: checked.dropped,
    });
    reply.code(dialect.okStatus).send(batchAnswer(kept, checked.dropped, checked.errors, req.id));
  }
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
async function authenticate(deps: BatchRouteDeps, bearer: BearerResult): Promise<AuthRecord | Refusal> {
  if (bearer.kind === 'missing') return { code: 'missing_key' };
  const invalid: Refusal = { code: 'invalid_key' };
  if (!isKeyShaped(bearer.token)) return invalid;
  const hash = hashKey(bearer.token);
  const auth = await deps.collector.authenticate(hash);
  if (auth === null || !hashesMatch(auth.hash, hash) || !keyWorks(auth, deps.clock())) return invalid;
  return auth;
}
