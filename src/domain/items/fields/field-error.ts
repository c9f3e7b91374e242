import type { ItemErrorCode } from '../../../errors/codes.js';

/**
 * Errors listed for one item at most. An item gets one error per "$" key it
 * should not send, without limit otherwise: one with 100,000 of them made a
 * 15 MB answer, and as much again in every kept sample and live view. Past
 * this many, the rest are only counted, on the last one listed.
 */
export const MAX_ERRORS_PER_ITEM = 100;

/** One thing wrong with one field of an item. */
export interface FieldError {
  code: ItemErrorCode;
  /** Path inside the item: "event", "properties.$currency", or "item". */
  field: string;
  message: string;
}

/** A field's value once checked, or the one fault it has. */
export type FieldCheck = { ok: true; value: string } | { ok: false; error: FieldError };

// A JSON null stands for "not sent" in optional fields: many serialisers write
// unset fields as null, and refusing them would refuse whole client libraries.
export const sent = (v: unknown): boolean => v !== undefined && v !== null;

/** The value of a field check, or null with its fault added to `errors`. */
export function take(r: FieldCheck, errors: FieldError[]): string | null {
  if (r.ok) return r.value;
  errors.push(r.error);
  return null;
}

/** Adds a fault and gives the field's value as refused: null. */
export function refuse(errors: FieldError[], code: FieldError['code'], field: string, message: string): null {
  errors.push({ code, field, message });
  return null;
}

/** A field error as it stands in an answer, with the item's index. */
export interface ItemError extends FieldError {
  index: number;
  /** On the last error listed for an item that has more than MAX_ERRORS_PER_ITEM: how many more it has, not listed. */
  more_errors?: number;
}

/**
 * One item's errors as an answer lists them: the first MAX_ERRORS_PER_ITEM
 * in field order, the last of them telling how many more there are
 * (`unlisted` counts those the checks did not even make).
 */
export function listErrors(index: number, sorted: FieldError[], unlisted: number, out: ItemError[]): void {
  const shown = Math.min(sorted.length, MAX_ERRORS_PER_ITEM);
  for (let i = 0; i < shown; i++) out.push({ index, ...sorted[i]! });
  const more = unlisted + sorted.length - shown;
  if (more === 0 || shown === 0) return;
  const last = out[out.length - 1]!;
  const what = more === 1 ? '1 more error of this item is' : `${more} more errors of this item are`;
  out[out.length - 1] = { ...last, message: `${last.message} ${what} not listed.`, more_errors: more };
}
