import type { EnrichedItem, PolicyDrop } from '../items/enriched-item.js';
import type { ItemError } from '../items/fields/field-error.js';
import type { SampleText } from '../outcomes/sample-text.js';

/** What the checks made of a request's items: what goes to the store, and what does not. */
export interface CheckedBatch {
  /** Items the request held, valid or not: what a project's limits count. */
  count: number;
  /** Keys of the body besides "items", which are not kept. */
  droppedKeys: string[];
  errors: ItemError[];
  /** Valid items, enriched: what the store is asked to keep. */
  items: EnrichedItem[];
  /** Valid items dropped before the store, by the source's policy (bot filter). */
  dropped: PolicyDrop[];
  /** What a developer recognises each refused item by, for the console's live view. */
  refused: RefusedItem[];
  /**
   * The faults the source's tracking plan finds in the valid items, one per
   * item at most, when it checks one; what becomes of them (refused or
   * warned) is the source's mode, decided where the request is answered.
   */
  planFaults?: ItemError[];
}

/** A refused item's event name and distinct_id, when it sent them as text (cut to 128 characters). */
export interface RefusedItem {
  index: number;
  event: string | null;
  distinctId: string | null;
  /** Its insert_id as sent, when text: the answers of some intakes name it (Mixpanel's /import). */
  insertId?: string | null;
  /**
   * The item as sent, to be kept as a sample (domain/outcomes): only for the
   * newest SAMPLES_PER_CODE of each code in the request, since no more of a
   * code are kept; its ids in full (an alias's previous_id too), for an erasure to find it by.
   */
  sample: { text: SampleText; distinctId: string | null; anonymousId: string | null; previousId: string | null } | null;
}
