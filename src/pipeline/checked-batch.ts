import { checkBody, checkItems } from './check-batch.js';
import type { ItemContext } from '../domain/items/kind.js';
import type { EnrichedItem, PolicyDrop } from '../domain/items/enriched-item.js';
import type { ItemError } from '../domain/items/fields/field-error.js';
import { parseJsonBody } from './parse-body.js';
import { type PlanContext, type ReadyPlan, compiledPlanFor, compiledPlanNow } from '../domain/plans/check.js';
import { cutText } from '../domain/echo.js';
import { type Refusal, isRefusal } from '../domain/intake/refusal.js';
import { SAMPLES_PER_CODE } from '../domain/outcomes/ledger.js';
import { type SampleText, sampleText } from '../domain/outcomes/sample-text.js';

import type { CheckedBatch, RefusedItem } from '../domain/intake/checked.js';

export type { CheckedBatch, RefusedItem };

/**
 * What item checks and enrichment need to know of the request, as it crosses
 * to a check thread: its source's plan as data (PlanContext), which is not
 * yet one a check can take.
 */
export type BatchContext = ItemContext & {
  /** The source's tracking plan, when it checks one: each valid item is held to it after its own checks (domain/plans). */
  plan?: PlanContext;
};

/** A request's context on the thread that checks its items: its plan, if any, compiled there (readyContext). */
export type CheckContext = ItemContext & { plan?: ReadyPlan };

/**
 * The context with its plan compiled on this thread: the only way from a
 * request's context to one the checks take. At once (no turn of the event
 * loop) when the source checks no plan or this thread holds its version
 * already; else once the version is compiled here (compiledPlanFor).
 */
export function readyContext(ctx: BatchContext): CheckContext | Promise<CheckContext> {
  const { plan } = ctx;
  if (plan === undefined) return ctx as ItemContext;
  const now = compiledPlanNow(plan);
  if (now !== undefined) return { ...ctx, plan: now };
  return compiledPlanFor(plan).then((ready) => ({ ...ctx, plan: ready }));
}

/**
 * The project's windows, between reading a batch and checking its items: counts its items
 * against the project's limits. A refusal, or null to go on.
 */
export type Admit = (count: number) => Promise<Refusal | null>;

/** The body parsed and shaped as a batch, its items not yet looked at. */
export function readBatch(bytes: Uint8Array): { items: unknown[]; droppedKeys: string[] } | Refusal {
  const body = parseJsonBody(bytes);
  return isRefusal(body) ? body : checkBody(body.json);
}

/** A batch body's checks from parsing on, on this thread: read, admitted by the limits, each item checked and enriched. */
export async function checkBatchBody(bytes: Uint8Array, ctx: BatchContext, admit: Admit): Promise<CheckedBatch | Refusal> {
  const batch = readBatch(bytes);
  if (isRefusal(batch)) return batch;
  const refused = await admit(batch.items.length);
  if (refused !== null) return refused;
  const ready = readyContext(ctx);
  return checkBatch(batch.items, batch.droppedKeys, ready instanceof Promise ? await ready : ready);
}

/** Items already read and admitted: each item checked and enriched. */
export function checkBatch(items: unknown[], droppedKeys: string[], ctx: CheckContext): CheckedBatch {
  const checked = checkItems(items, ctx);
  const refused = refusedItems(checked.errors, items);
  return withPlan({ count: items.length, droppedKeys, errors: checked.errors, items: checked.items, dropped: checked.dropped, refused }, ctx, items);
}

/**
 * The batch with its plan's faults, when the source checks a plan: after the
 * items' own checks, on the thread that made them. `raws` are the items as
 * sent, by index (where an item names its rule version).
 */
export function withPlan(batch: CheckedBatch, ctx: CheckContext, raws: readonly unknown[]): CheckedBatch {
  if (ctx.plan !== undefined) batch.planFaults = ctx.plan.checkItems(batch.items, raws);
  return batch;
}

/** What names each refused item, and samples of the newest of each code: `errors` in index order, each item's together, `items` as sent. */
export function refusedItems(errors: ItemError[], items: unknown[]): RefusedItem[] {
  const refused: RefusedItem[] = [];
  let last = -1;
  for (const e of errors) {
    // An item's errors come together (checkItems).
    if (e.index === last) continue;
    last = e.index;
    const raw = items[e.index];
    const item: RefusedItem = { index: e.index, event: textField(raw, 'event'), distinctId: textField(raw, 'distinct_id'), sample: null };
    const insertId = textField(raw, 'insert_id');
    if (insertId !== null) item.insertId = insertId;
    refused.push(item);
  }
  if (refused.length > 0) addSamples(refused, errors, items);
  return refused;
}

/** Samples of the newest SAMPLES_PER_CODE refused items of each code (an item's code is its first error's): older ones would not be kept. */
function addSamples(refused: RefusedItem[], errors: ItemError[], items: unknown[]): void {
  const firstCode = new Map<number, string>();
  for (const e of errors) if (!firstCode.has(e.index)) firstCode.set(e.index, e.code);
  const taken = new Map<string, number>();
  for (let i = refused.length - 1; i >= 0; i--) {
    const r = refused[i]!;
    const code = firstCode.get(r.index)!;
    const n = taken.get(code) ?? 0;
    if (n >= SAMPLES_PER_CODE) continue;
    taken.set(code, n + 1);
    const raw = items[r.index];
    r.sample = { text: sampleText(raw), distinctId: idField(raw, 'distinct_id'), anonymousId: idField(raw, 'anonymous_id'), previousId: idField(raw, 'previous_id') };
  }
}

/**
 * An id as sent, when it is text of a length an id can have, or a number
 * (refused, but the id it stands for: erasure and suppression find its
 * sample by that text, as the peers' intakes read numbers).
 */
function idField(raw: unknown, name: string): string | null {
  if (typeof raw !== 'object' || raw === null || !Object.hasOwn(raw, name)) return null;
  const v = (raw as Record<string, unknown>)[name];
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return typeof v === 'string' && v.length <= 1024 ? v : null;
}

function textField(raw: unknown, name: string): string | null {
  if (typeof raw !== 'object' || raw === null || !Object.hasOwn(raw, name)) return null;
  const v = (raw as Record<string, unknown>)[name];
  return typeof v === 'string' ? cutText(v, 128) : null;
}
