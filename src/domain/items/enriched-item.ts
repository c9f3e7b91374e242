import type { DropReason } from '../../errors/codes.js';
import type { IngestItem, ItemType } from '../ingest/item.js';
import type { FieldError } from './fields/field-error.js';

/** What the checks learn of an item that is not stored, for the dry run's answer and enrichment. */
interface CheckNotes {
  /** The raw $user_agent, for enrichment; never stored. */
  userAgent: string | null;
  /** Paths of what the client sent that will not be stored. */
  droppedKeys: string[];
}

/** CheckNotes' fields, at run time (what crosses between threads besides the item's own: pipeline/item-transfer.ts). */
export const CHECK_NOTES = Object.keys({ userAgent: true, droppedKeys: true } satisfies Record<keyof CheckNotes, true>) as (keyof CheckNotes)[];

/**
 * A valid item as the checks build it (each item type in src/domain/items declares its
 * fields): what the ingest engine is given, with what the dry run shows besides.
 */
export type EnrichedItem<T extends ItemType = ItemType> = IngestItem<T> & CheckNotes;

/** An item as answers and the live view show it: all of it but what only the store reads (its stored text). A dropped item has no more. */
export type ShownItem = EnrichedItem extends infer I ? (I extends unknown ? Omit<I, 'storedJson'> : never) : never;

/** A valid item dropped before the store, by the source's policy, with what it would have been. */
export interface PolicyDrop {
  index: number;
  reason: DropReason;
  item: ShownItem;
}

/** A valid item, enriched, and whether the source's policy drops it before the store; or its faults. */
export type ItemCheck =
  | { ok: true; item: EnrichedItem; dropped: null }
  | { ok: true; item: ShownItem; dropped: DropReason }
  /** `unlisted`: faults past MAX_ERRORS_PER_ITEM that were counted, not made (fields/field-error.ts). */
  | { ok: false; errors: FieldError[]; unlisted: number };
