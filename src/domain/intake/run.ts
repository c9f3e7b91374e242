/**
 * The intake pipeline's rules, HTTP-free: whose key it is and what it may
 * send (auth and the limits), the verdict on the checked items, the durable
 * write, and what became of every item (`settle`: the ledger and its samples,
 * the live view). Every intake's requests run through these, in the order the
 * edge's intake-checks.ts lists; the edge reads the socket, holds bodies
 * against the server's memory and answers in each intake's shape, and hands
 * this module a run (docs/design.md, "Intakes").
 */
import { type BearerResult, hashKey, hashesMatch, isKeyShaped, keyWorks } from '../keys.js';
import type { RateLimits, WindowGroup } from '../limits/policies.js';
import type { LiveWindow } from '../live-window.js';
import type { Collector } from '../collector.js';
import { type ItemOutcome, type KeptOutcome, KeyNoLongerWorksError } from '../ingest/job.js';
import { type IngestItem, KINDS } from '../ingest/item.js';
import type { EnrichedItem } from '../items/enriched-item.js';
import type { ItemError } from '../items/fields/field-error.js';
import type { ItemCounts } from '../outcomes/ledger.js';
import { sampleText } from '../outcomes/sample-text.js';
import { type AuthRecord, StoreUnavailableError } from '../../stores/port.js';
import type { CheckedBatch } from './checked.js';
import { type ItemTally, type RequestFacts, tallyKept, tallyRefused } from './facts.js';
import { feedLive } from './live-feed.js';
import { previousIdOf, recordChecked, recordWhole, sendable } from './outcome-records.js';
import type { Refusal } from './refusal.js';
import { recordPlanEvents, recordWarnings } from './plan.js';

/** What the rules need of the server: one of each per server. */
export interface RunDeps {
  collector: Collector;
  limits: RateLimits;
  clock: () => number;
  /** The console's live view of each source's answers; none when absent. */
  live?: LiveWindow;
}

/** How an intake's requests are answered, as far as the rules care: the status of a taken request, and whether one that keeps nothing is refused whole. */
export interface IntakeAnswers {
  /** Status of a request that was taken (some items may be refused). */
  okStatus: 200 | 202;
  /** Whether a request in which no item could be kept is refused whole (400 all_items_invalid). */
  refuseAllInvalid: boolean;
}

/** What a request asks of the rules in its query. */
export interface RunOptions {
  /** A dry run (validate=true): checked and tried, nothing stored. */
  validate: boolean;
  /** All or nothing (strict=true): any invalid item refuses the request whole. */
  strict: boolean;
}

/** What the rules need of the request that carries a run: the edge's, for its id, its links, its headers and its log. */
export interface RunRequest {
  id: string;
  /** The server's own URL, for messages that link to its console. */
  baseUrl: string;
  /** Headers the answer carries whatever it is (the limits' own). */
  setHeaders(headers: Record<string, string>): void;
  /** A store failure, logged once (its message only: never a body). */
  storeFailed(err: unknown): void;
}

/** One request as the rules see it: each step sets what the later ones, and `settle`, read. */
export interface IntakeRun {
  deps: RunDeps;
  intake: { answers: IntakeAnswers };
  request: RunRequest;
  /** What the log line and the metrics learn as the request goes (the edge's onResponse reads the same object). */
  facts: RequestFacts;
  /** Set once the key's checks pass. */
  auth: AuthRecord | undefined;
  options: RunOptions;
  /** Server clock when the body was admitted: the items' arrival. */
  arrival: number;
  /** The items' verdicts, once checked; the store's refusals join them. */
  checked: CheckedBatch | undefined;
  /** The store's answer for each item written (or tried, in a dry run). */
  outcomes: ItemOutcome[] | undefined;
  /** Those of the items it kept. */
  kept: KeptOutcome[] | undefined;
}

/** The 404 of a key whose project has the batch API off: both ways to switch it on, the console's and the command line's. */
export function apiOffMessage(baseUrl: string, projectId: string): string {
  return (
    `The batch API is switched off for project ${projectId}. Switch it on with "inlet project update ${projectId} --api-enabled true", ` +
    `or in the console: ${baseUrl}/console/projects/${projectId}#settings (API enabled, then Save).`
  );
}

/** The key's checks: a key that works, of a project with the API enabled, within the per-key limit. */
export async function admitKey(run: IntakeRun, key: BearerResult): Promise<AuthRecord | Refusal> {
  const { deps, facts } = run;
  let auth: AuthRecord | Refusal;
  try {
    auth = await authenticate(deps, key);
  } catch (e) {
    // The key cannot be checked while the store is away: as retryable as a failed write.
    return unavailable(run, e);
  }
  if ('code' in auth) return auth;
  facts.projectId = auth.project.id;
  facts.sourceId = auth.source.id;
  const now = deps.clock();
  deps.collector.recordKeyUse(auth.keyId, now);
  if (!auth.project.apiEnabled) {
    return { code: 'not_found', message: apiOffMessage(run.request.baseUrl, auth.project.id) };
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

/** A Bearer key that exists and still works, with its source, project and org alive. */
async function authenticate(deps: RunDeps, bearer: BearerResult): Promise<AuthRecord | Refusal> {
  if (bearer.kind === 'missing') return { code: 'missing_key' };
  const invalid: Refusal = { code: 'invalid_key' };
  if (!isKeyShaped(bearer.token)) return invalid;
  const hash = hashKey(bearer.token);
  const auth = await deps.collector.authenticate(hash);
  if (auth === null || !hashesMatch(auth.hash, hash) || !keyWorks(auth, deps.clock())) return invalid;
  return auth;
}

/** A batch's items counted against its project's windows (`windows`: which ones count them); a refusal when one is full. */
export async function admitItems(run: IntakeRun, count: number, at: number, windows: WindowGroup): Promise<Refusal | null> {
  run.facts.itemCount = count;
  const verdict = await run.deps.limits.checkItems(run.auth!.project.id, count, at, windows);
  run.request.setHeaders(verdict.headers);
  if (verdict.allowed) return null;
  const window = windows === 'import' ? 'import' : verdict.retryAfter === 60 ? 'sustained' : 'burst';
  run.facts.limitPolicy = window;
  return {
    code: 'rate_limited',
    message: `This project sent more items than its ${window} limit allows; nothing was stored. Resend after Retry-After seconds.`,
    headers: { 'Retry-After': String(verdict.retryAfter) },
  };
}

/**
 * The person updates some messages carry (an intake in another API's shape),
 * written before the messages and not counted (a message is counted once, as
 * its event): if they fail, the request is answered 503 and resent whole,
 * when each update, whose insert_id is derived from its event's, is a repeat.
 * An update the store refuses on what the project holds (a group of a sixth
 * type) refuses its message, as the checks would: tried first, so that none
 * of that message's updates is written, and its item is not written either.
 */
export async function writeUpdates(run: IntakeRun, updates: EnrichedItem[], checked: CheckedBatch): Promise<Refusal | null> {
  if (updates.length === 0) return null;
  const auth = run.auth!;
  const ingest = (items: EnrichedItem[], dryRun: boolean) =>
    run.deps.collector.ingest({ projectId: auth.project.id, sourceId: auth.source.id, keyId: auth.keyId, receivedAt: run.arrival, items, dryRun, counted: false });
  try {
    let written = updates;
    if (updates.some(refusableByStore)) {
      const gone = refusedByStore(await ingest(updates, true), checked);
      written = updates.filter((u) => !gone.has(u.index));
    }
    // A type another server added between the two is the one case left to the write: its message is still refused.
    if (written.length > 0) refusedByStore(await ingest(written, false), checked);
    return null;
  } catch (e) {
    if (e instanceof KeyNoLongerWorksError) return { code: 'invalid_key' };
    return unavailable(run, e);
  }
}

/** The messages whose updates the store refused, moved out of the checked items into their errors: their indices. */
function refusedByStore(outcomes: ItemOutcome[], checked: CheckedBatch): Set<number> {
  const refused: ItemError[] = [];
  for (const o of outcomes) if (o.status === 'refused') refused.push({ index: o.index, code: o.code, field: o.field, message: o.message });
  refuseStored(refused, checked);
  return new Set(refused.map((e) => e.index));
}

/** The item checks' verdict on a request: refused whole with strict=true and any invalid item, or with no item kept where the intake refuses that. */
export function itemsVerdict(run: IntakeRun): Refusal | null {
  const checked = run.checked!;
  run.facts.items = tallyRefused(checked.errors);
  if (run.options.strict && checked.errors.length > 0) return refuseItems(checked, 'strict_item_invalid');
  if (checked.items.length + checked.dropped.length === 0 && !run.options.validate && run.intake.answers.refuseAllInvalid) {
    return refuseItems(checked, 'all_items_invalid');
  }
  return null;
}

/** A request refused whole over its items, by the checks or by the store: `settle` records each item's fate. */
function refuseItems(checked: CheckedBatch, code: 'strict_item_invalid' | 'all_items_invalid'): Refusal {
  return { code, errors: checked.errors };
}

/** The durable write of the items the verdict let through (tried only, in a dry run). */
export async function writeChecked(run: IntakeRun): Promise<Refusal | null> {
  const { deps, options, facts } = run;
  const auth = run.auth!;
  const checked = run.checked!;
  const ingest = (dryRun: boolean) =>
    deps.collector.ingest({ projectId: auth.project.id, sourceId: auth.source.id, keyId: auth.keyId, receivedAt: run.arrival, items: checked.items, dryRun });
  let outcomes: ItemOutcome[];
  try {
    // Only the store can refuse a group (a sixth type) or an alias (an illegal merge): with
    // strict=true such a request is tried first, so that all or nothing still holds. A type
    // added by another server between the two is the one case left to the write.
    if (options.strict && !options.validate && checked.items.some(refusableByStore)) {
      const tried = await ingest(true);
      if (tried.some((o) => o.status === 'refused')) {
        keptOrRefused(tried, checked, facts.items!);
        return refuseItems(checked, 'strict_item_invalid');
      }
    }
    outcomes = checked.items.length === 0 ? [] : await ingest(options.validate);
  } catch (e) {
    // The key was revoked (or its source, project or org deleted) while the body was read.
    if (e instanceof KeyNoLongerWorksError) return { code: 'invalid_key' };
    return unavailable(run, e);
  }
  const refusedByChecks = checked.errors.length;
  const kept = keptOrRefused(outcomes, checked, facts.items!);
  // A dry run with strict=true is refused as the batch it tries would be.
  if (options.strict && options.validate && checked.errors.length > refusedByChecks) return refuseItems(checked, 'strict_item_invalid');
  // Every item refused, some by the store (a sixth group type, an illegal merge): as if the checks had refused them all.
  if (!options.validate && run.intake.answers.refuseAllInvalid && kept.length + checked.dropped.length === 0) {
    return refuseItems(checked, 'all_items_invalid');
  }
  tallyKept(facts.items!, kept, checked.dropped);
  facts.dryRun = options.validate;
  run.outcomes = outcomes;
  run.kept = kept;
  return null;
}

/**
 * What became of every item, recorded once, whichever step ended the request
 * (`ending`: null when its items were taken, else its refusal). A request
 * refused whole before its items were checked counts as its code says; one
 * refused over its items (by the checks or by the store) is counted, sampled
 * and shown item by item as any other; one taken is counted with the store's
 * answers. A dry run records nothing.
 */
export function settle(run: IntakeRun, ending: Refusal | null): void {
  if (ending === null) return settleTaken(run);
  if (ending.code === 'strict_item_invalid' || ending.code === 'all_items_invalid') settleRefusedItems(run);
  else recordWhole(run.deps.collector.outcomes, run.facts, ending.code, run.deps.clock());
}

function settleRefusedItems(run: IntakeRun): void {
  if (run.options.validate) return;
  const { deps, auth, facts } = run;
  const checked = run.checked!;
  const at = deps.clock();
  feedLive(deps.live, auth!.source.id, run.request.id, at, 400, { count: checked.count, refused: checked.refused, errors: checked.errors });
  const tally = facts.items!;
  // The items that passed were refused with the rest: under the request's code, having none of their own.
  const passed = checked.items.length + checked.dropped.length;
  const counts = passed === 0 ? tally : { ...tally, refused: new Map([...tally.refused, ['strict_item_invalid', passed]]) };
  recordChecked(deps.collector.outcomes, run.request.id, { projectId: auth!.project.id, sourceId: auth!.source.id }, at, checked, counts, null);
  recordPlanEvents(run, false);
}

function settleTaken(run: IntakeRun): void {
  if (run.options.validate) return;
  const { deps, auth, facts } = run;
  const checked = run.checked!;
  // What the store decided (accepted, duplicate, dropped there) was counted with the write; the rest is the ledger's.
  recordChecked(deps.collector.outcomes, run.request.id, { projectId: auth!.project.id, sourceId: auth!.source.id }, run.arrival, checked, notWritten(facts.items!, checked), run.outcomes!);
  recordWarnings(run);
  recordPlanEvents(run, true);
  feedLive(deps.live, auth!.source.id, run.request.id, deps.clock(), run.intake.answers.okStatus, {
    count: checked.count, refused: checked.refused, errors: checked.errors, stored: { items: checked.items, outcomes: run.kept! }, dropped: checked.dropped,
  });
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
  for (const e of refused) tally.refused.set(e.code, (tally.refused.get(e.code) ?? 0) + 1);
  refuseStored(refused, checked);
  return kept;
}

/** Items the store refused joined to the item errors, in index order, as if the checks had refused them. */
function refuseStored(refused: ItemError[], checked: CheckedBatch): void {
  if (refused.length === 0) return;
  const gone = new Set(refused.map((e) => e.index));
  checked.errors = [...checked.errors, ...refused].sort((a, b) => a.index - b.index);
  // The live view names each refused item by its event and distinct_id; these items had passed the checks, so both are theirs.
  const named = checked.items
    .filter((i) => gone.has(i.index))
    .map((i) => ({ index: i.index, event: i.event, distinctId: i.distinctId, sample: { text: sampleText(sendable(i)), distinctId: i.distinctId, anonymousId: i.anonymousId, previousId: previousIdOf(i) } }));
  checked.refused = [...checked.refused, ...named].sort((a, b) => a.index - b.index);
  checked.items = checked.items.filter((i) => !gone.has(i.index));
}

/** A store failure answered as 503 collection_unavailable; anything else is a bug and propagates. */
export function unavailable(run: { request: RunRequest }, e: unknown): Refusal {
  if (!(e instanceof StoreUnavailableError)) throw e;
  run.request.storeFailed(e.cause ?? e);
  return { code: 'collection_unavailable' };
}
