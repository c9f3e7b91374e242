import type { DropReason } from '../errors/codes.js';
import { type ItemType, KINDS } from '../domain/ingest/item.js';
import type { DryRunParts } from '../domain/items/kind.js';
import type { ItemError } from '../domain/items/fields/field-error.js';
import type { KeptOutcome } from '../domain/ingest/job.js';
import type { EnrichedItem, PolicyDrop, ShownItem } from '../domain/items/enriched-item.js';

/** The 202 body: what was kept, dropped and refused. */
export interface BatchAnswer {
  accepted: number;
  dropped: { index: number; reason: DropReason }[];
  errors: ItemError[];
  /** Indices answered as repeats of an insert_id stored before (additive to the reference). */
  duplicates: number[];
  request_id: string;
}

export function batchAnswer(
  outcomes: KeptOutcome[],
  policyDrops: { index: number; reason: DropReason }[],
  errors: ItemError[],
  requestId: string,
): BatchAnswer {
  let accepted = 0;
  const duplicates: number[] = [];
  const dropped = policyDrops.map(({ index, reason }) => ({ index, reason }));
  for (const o of outcomes) {
    if (o.status === 'dropped') dropped.push({ index: o.index, reason: o.reason });
    else accepted++;
    if (o.status === 'duplicate') duplicates.push(o.index);
  }
  dropped.sort((a, b) => a.index - b.index);
  return { accepted, dropped, errors, duplicates, request_id: requestId };
}

/** One item of a validate=true answer: exactly what would be stored, and why. */
export interface DryRunItem {
  index: number;
  type: ItemType;
  outcome: 'accepted' | 'duplicate' | 'dropped';
  reason: DropReason | null;
  event_id: string | null;
  event: string | null;
  distinct_id: string | null;
  anonymous_id: string | null;
  person: { id: string; new: boolean } | null;
  session: Part<'session'>;
  insert_id: string | null;
  timestamp: string;
  properties: Record<string, unknown>;
  enrichment: Record<string, unknown>;
  dropped_keys: string[];
  group: Part<'group'>;
  alias: Part<'alias'>;
  set_once: Part<'set_once'>;
  unset: Part<'unset'>;
}

/** A part of a dry run's item that only some types show (each type's `dryRun`, src/domain/items), null on the others. */
type Part<K extends keyof DryRunParts> = NonNullable<DryRunParts[K]> | null;

export function dryRunAnswer(
  items: EnrichedItem[],
  outcomes: KeptOutcome[],
  policyDrops: PolicyDrop[],
  errors: ItemError[],
  bodyDroppedKeys: string[],
  requestId: string,
): { items: DryRunItem[]; errors: ItemError[]; dropped_keys: string[]; request_id: string } {
  const byIndex = new Map(outcomes.map((o) => [o.index, o]));
  const rows: DryRunItem[] = [];
  for (const item of items) rows.push(dryRunItem(item, byIndex.get(item.index)!));
  for (const d of policyDrops) rows.push(dryRunItem(d.item, { index: d.index, status: 'dropped', reason: d.reason }));
  rows.sort((a, b) => a.index - b.index);
  return { items: rows, errors, dropped_keys: bodyDroppedKeys, request_id: requestId };
}

function dryRunItem(item: ShownItem, o: KeptOutcome): DryRunItem {
  const effect = o.status === 'accepted' ? o.effect : undefined;
  // What only some types show (a track's session, a group, an alias, an identify's set_once and unset).
  const own = KINDS[item.type].dryRun(item, effect);
  return {
    index: item.index,
    type: item.type,
    outcome: o.status,
    reason: o.status === 'dropped' ? o.reason : null,
    event_id: o.status === 'dropped' ? null : o.eventId,
    event: item.event,
    distinct_id: item.distinctId,
    anonymous_id: item.anonymousId,
    person: o.status === 'accepted' && o.personId !== null ? { id: o.personId, new: o.personIsNew } : null,
    session: own.session ?? null,
    insert_id: item.insertId,
    timestamp: new Date(item.timestamp).toISOString(),
    properties: item.properties,
    enrichment: item.enrichment,
    dropped_keys: item.droppedKeys,
    group: own.group ?? null,
    alias: own.alias ?? null,
    set_once: own.set_once ?? null,
    unset: own.unset ?? null,
  };
}
