import type { DropReason, ItemErrorCode } from '../../errors/codes.js';
import type { ItemError } from '../items/fields/field-error.js';
import type { KeptOutcome } from '../ingest/job.js';

/** What became of a request's items, counted (never the items themselves). */
export interface ItemTally {
  /** Stored by this request. */
  accepted: number;
  /** Already stored before (the API's `accepted` counts them too). */
  duplicate: number;
  dropped: Map<DropReason, number>;
  refused: Map<ItemErrorCode, number>;
}

/** What the request log line and the metrics learn of a request as it is handled. */
export interface RequestFacts {
  projectId: string | null;
  sourceId: string | null;
  items: ItemTally | null;
  /** Items the request held, once counted against the project's windows. */
  itemCount: number | null;
  /** A validate=true run: nothing was stored. */
  dryRun: boolean;
  /** The rate limit that refused the request, if one did. */
  limitPolicy: 'key' | 'burst' | 'sustained' | 'import' | null;
  /** Items kept with a warning of the source's tracking plan (observe), by code. */
  warned?: Map<string, number>;
}

export function emptyFacts(): RequestFacts {
  return { projectId: null, sourceId: null, items: null, itemCount: null, dryRun: false, limitPolicy: null };
}

/** Counts a request's refused items: what a request refused whole still reports. */
export function tallyRefused(errors: ItemError[]): ItemTally {
  const t: ItemTally = { accepted: 0, duplicate: 0, dropped: new Map(), refused: new Map() };
  // An item can have several field errors; it is refused once, under its first.
  const seen = new Set<number>();
  for (const e of errors) {
    if (seen.has(e.index)) continue;
    seen.add(e.index);
    t.refused.set(e.code, (t.refused.get(e.code) ?? 0) + 1);
  }
  return t;
}

/** Adds what became of the items that passed the checks: stored, repeated or dropped. */
export function tallyKept(t: ItemTally, outcomes: KeptOutcome[], policyDrops: { reason: DropReason }[]): void {
  const drop = (r: DropReason) => t.dropped.set(r, (t.dropped.get(r) ?? 0) + 1);
  for (const d of policyDrops) drop(d.reason);
  for (const o of outcomes) {
    if (o.status === 'accepted') t.accepted++;
    else if (o.status === 'duplicate') t.duplicate++;
    else drop(o.reason);
  }
}

/** The sum of a tally's counts by reason or code. */
export function total(m: Map<string, number>): number {
  let n = 0;
  for (const v of m.values()) n += v;
  return n;
}
