import type { ItemOutcome } from '../ingest/job.js';
import type { ItemCounts, OutcomeLedger, SampleInput } from '../outcomes/ledger.js';
import { sampleText } from '../outcomes/sample-text.js';
import type { DropReason, RequestErrorCode } from '../../errors/codes.js';
import { WITHHELD } from '../../stores/port-outcomes.js';
import type { CheckedBatch } from './checked.js';
import type { RequestFacts } from './facts.js';
import type { EnrichedItem, ShownItem } from '../items/enriched-item.js';
import type { ItemError } from '../items/fields/field-error.js';
import { KINDS } from '../ingest/item.js';

/**
 * The ledger's records of what became of a request's items (docs/design.md,
 * "What became of every item"), made once per request by `settle` (run.ts)
 * unless it was a dry run: `recordChecked` when its items went through the
 * checks, `recordWhole` when the request was refused whole once its source
 * was known.
 */

/** Requests refused whole that count once their source is known: one item each, or their items when they were counted. */
const COUNTED_WHOLE: ReadonlySet<RequestErrorCode> = new Set<RequestErrorCode>([
  'invalid_json', 'invalid_body', 'batch_too_many_items', 'payload_too_large', 'unsupported_media_type', 'unsupported_encoding', 'rate_limited',
]);

/** A request refused whole with one of the codes that count: counted under it, as `refused`. */
export function recordWhole(ledger: OutcomeLedger, facts: RequestFacts, code: RequestErrorCode, at: number): void {
  if (facts.projectId === null || facts.sourceId === null || facts.dryRun || !COUNTED_WHOLE.has(code)) return;
  ledger.count(facts.projectId, facts.sourceId, at, 'refused', code, facts.itemCount ?? 1);
}

/**
 * A request whose items were checked: its tally (what the answer said of each
 * item), and samples of what it refused or dropped. `outcomes` are the
 * store's answers for the valid items; null when the request was refused
 * whole by the item checks (strict_item_invalid, all_items_invalid).
 */
export function recordChecked(
  ledger: OutcomeLedger,
  requestId: string,
  ids: { projectId: string; sourceId: string },
  at: number,
  checked: CheckedBatch,
  tally: ItemCounts,
  outcomes: ItemOutcome[] | null,
): void {
  const samples: SampleInput[] = [];
  if (checked.refused.length > 0) refusedSamples(checked, samples);
  if (outcomes !== null) droppedSamples(checked, outcomes, samples);
  ledger.record({ ...ids, requestId, receivedAt: at, counts: tally, samples });
}

function refusedSamples(checked: CheckedBatch, out: SampleInput[]): void {
  const byIndex = new Map<number, ItemError[]>();
  for (const r of checked.refused) if (r.sample !== null) byIndex.set(r.index, []);
  for (const e of checked.errors) byIndex.get(e.index)?.push(e);
  for (const r of checked.refused) {
    if (r.sample === null) continue;
    const errors = byIndex.get(r.index)!;
    out.push({
      outcome: 'refused', code: errors[0]!.code, codes: [...new Set(errors.map((e) => e.code))], errors: JSON.stringify(errors),
      item: r.sample.text.text, cut: r.sample.text.cut, index: r.index, distinctId: r.sample.distinctId, anonymousId: r.sample.anonymousId,
      previousId: r.sample.previousId,
    });
  }
}

function droppedSamples(checked: CheckedBatch, outcomes: ItemOutcome[], out: SampleInput[]): void {
  for (const d of checked.dropped) out.push(droppedSample(d.item, d.reason));
  let items: Map<number, EnrichedItem> | null = null;
  for (const o of outcomes) {
    if (o.status !== 'dropped') continue;
    items ??= new Map(checked.items.map((i) => [i.index, i]));
    out.push(droppedSample(items.get(o.index)!, o.reason));
  }
}

/**
 * A dropped item kept as a batch item again: it was valid, so it can be sent
 * as it is once its reason is gone. An item of a suppressed person is kept
 * withheld: that it came, and nothing of what it sent.
 */
function droppedSample(item: ShownItem, reason: DropReason): SampleInput {
  const kept = { index: item.index, outcome: 'dropped', code: reason, codes: [reason] } as const;
  if (reason === 'suppressed') return { ...kept, codes: [reason], ...WITHHELD };
  const text = sampleText(sendable(item));
  return {
    ...kept, codes: [reason], errors: '[]', item: text.text, cut: text.cut, distinctId: item.distinctId, anonymousId: item.anonymousId, previousId: previousIdOf(item),
  };
}

/** The other user id an item names (an alias's previous_id): what an erasure of its person finds its sample by. */
export function previousIdOf(item: ShownItem): string | null {
  return KINDS[item.type].otherId(item);
}

/** A checked item in the batch API's shape. */
export function sendable(item: ShownItem): Record<string, unknown> {
  const common = {
    distinct_id: item.distinctId ?? undefined,
    anonymous_id: item.anonymousId ?? undefined,
    session_id: item.sessionId ?? undefined,
    insert_id: item.insertId ?? undefined,
    timestamp: new Date(item.timestamp).toISOString(),
    // The checks take $user_agent out of the properties for enrichment: it goes back, or a bot would be sent as a person.
    properties: item.userAgent === null ? item.properties : { ...item.properties, $user_agent: item.userAgent },
  };
  return KINDS[item.type].sendable(item, common);
}
