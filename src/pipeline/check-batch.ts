import type { Refusal } from '../domain/intake/refusal.js';
import type { ItemContext } from '../domain/items/kind.js';
import { checkItem } from './check-item.js';
import type { EnrichedItem, PolicyDrop } from '../domain/items/enriched-item.js';
import { type ItemError, listErrors } from '../domain/items/fields/field-error.js';
import { INSERT_ID } from '../domain/items/fields/ids.js';
import { isPlainObject } from '../domain/items/fields/text.js';
import { quoted } from '../domain/echo.js';

export const MAX_ITEMS = 500;

/** Field order (docs/design.md, "Validation"): the order errors of one item are listed in. */
export const FIELD_ORDER = [
  'item', 'type', 'event', 'group_type', 'group_key', 'distinct_id', 'previous_id', 'anonymous_id', 'session_id', 'insert_id', 'timestamp', 'properties', 'set_once', 'unset', 'context',
];
const rank = (field: string): number => FIELD_ORDER.indexOf(field.split('.')[0]!);

/** The body is an object with 1 to 500 items. */
export function checkBody(body: unknown): { items: unknown[]; droppedKeys: string[] } | Refusal {
  if (!isPlainObject(body) || !Array.isArray(body.items)) {
    return { code: 'invalid_body', message: 'The body must be a JSON object with an "items" array, such as {"items": [{"event": "signed_up", "distinct_id": "u_1"}]}.' };
  }
  if (body.items.length === 0) return { code: 'batch_empty' };
  if (body.items.length > MAX_ITEMS) {
    return { code: 'batch_too_many_items', message: `The batch has ${body.items.length} items; at most ${MAX_ITEMS} are allowed. Split it into smaller batches.` };
  }
  return { items: body.items, droppedKeys: Object.keys(body).filter((k) => k !== 'items') };
}

export interface BatchCheck {
  /** Valid items, enriched: what the store is asked to keep. */
  items: EnrichedItem[];
  /** Valid items dropped before the store, by the source's policy (bot filter). */
  dropped: PolicyDrop[];
  errors: ItemError[];
}

/**
 * Checks and enriches every item. An insert_id seen earlier in the same
 * request refuses the later item, whatever became of the earlier one.
 */
export function checkItems(items: unknown[], ctx: ItemContext): BatchCheck {
  const valid: EnrichedItem[] = [];
  const dropped: PolicyDrop[] = [];
  const errors: ItemError[] = [];
  const seen = new Set<string>();
  for (let index = 0; index < items.length; index++) {
    const raw = items[index];
    const r = checkItem(raw, index, ctx);
    const insertId = r.ok ? r.item.insertId : candidateInsertId(raw);
    const fieldErrors = r.ok ? [] : r.errors;
    if (insertId !== null) {
      if (seen.has(insertId)) {
        fieldErrors.push({
          code: 'duplicate_insert_id',
          field: 'insert_id',
          message: `insert_id ${quoted(insertId)} is used by an earlier item of this request; give each item its own insert_id.`,
        });
      }
      seen.add(insertId);
    }
    if (fieldErrors.length === 0 && r.ok) {
      if (r.dropped === null) valid.push(r.item);
      else dropped.push({ index, reason: r.dropped, item: r.item });
    } else {
      fieldErrors.sort((a, b) => rank(a.field) - rank(b.field));
      listErrors(index, fieldErrors, r.ok ? 0 : r.unlisted, errors);
    }
  }
  return { items: valid, dropped, errors };
}

/** The insert_id an invalid item would have had, when it has a usable one. */
function candidateInsertId(raw: unknown): string | null {
  if (!isPlainObject(raw)) return null;
  const id = raw.insert_id ?? (isPlainObject(raw.properties) ? raw.properties.$insert_id : undefined);
  return typeof id === 'string' && INSERT_ID.test(id) ? id : null;
}
