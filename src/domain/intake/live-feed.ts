import type { KeptOutcome } from '../ingest/job.js';
import type { LiveItem, LiveRequest, LiveWindow } from '../live-window.js';
import type { PolicyDrop, ShownItem } from '../items/enriched-item.js';
import type { RefusedItem } from './checked.js';
import type { ItemError } from '../items/fields/field-error.js';

/** What became of a request's items, for the live view: only what the answer itself said. */
export interface AnsweredItems {
  /** Items the request held, valid or not: a refusal of the whole request lists only the refused ones. */
  count: number;
  /** The names and ids of refused items. */
  refused: RefusedItem[];
  errors: ItemError[];
  /** Valid items that went to the store, and what the store did with each. */
  stored?: { items: ShownItem[]; outcomes: KeptOutcome[] };
  /** Valid items dropped before the store (bot filter). */
  dropped?: PolicyDrop[];
}

/** Publishes one answered request of a source to the live window, if the server keeps one and someone watches the source. */
export function feedLive(live: LiveWindow | undefined, sourceId: string, requestId: string, at: number, status: number, a: AnsweredItems): void {
  if (live === undefined || !live.watched(sourceId)) return;
  live.publish(sourceId, liveRequest(requestId, at, status, a));
}

/** The live view's record of a request: one line per kept or dropped item, one per field error of a refused one. */
export function liveRequest(requestId: string, at: number, status: number, a: AnsweredItems): LiveRequest {
  const items: LiveItem[] = [];
  const byIndex = new Map<number, ShownItem>();
  for (const i of a.stored?.items ?? []) byIndex.set(i.index, i);
  for (const o of a.stored?.outcomes ?? []) {
    items.push(
      fromItem(byIndex.get(o.index)!, o.status, o.status === 'accepted' ? o.personId : null, o.status === 'dropped' ? o.reason : null),
    );
  }
  for (const d of a.dropped ?? []) items.push(fromItem(d.item, 'dropped', null, d.reason));
  const names = new Map(a.refused.map((r) => [r.index, r]));
  for (const e of a.errors) {
    const named = names.get(e.index);
    items.push({
      index: e.index,
      outcome: 'refused',
      type: null,
      event: named?.event ?? null,
      distinctId: named?.distinctId ?? null,
      personId: null,
      timestamp: null,
      code: e.code,
      field: e.field,
      message: e.message,
    });
  }
  items.sort((x, y) => x.index - y.index);
  return { requestId, at, status, size: a.count, items };
}

function fromItem(i: ShownItem, outcome: LiveItem['outcome'], personId: string | null, code: string | null): LiveItem {
  // An erased person's later item is shown as its samples keep it: that it came, nothing it sent.
  const shown = code !== 'suppressed';
  return {
    index: i.index,
    outcome,
    type: i.type,
    event: shown ? i.event : null,
    distinctId: shown ? (i.distinctId ?? i.anonymousId) : null,
    personId,
    timestamp: i.timestamp,
    code,
    field: null,
    message: null,
  };
}
