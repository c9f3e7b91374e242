import type { ItemErrorCode } from '../errors/codes.js';

/** One thing wrong with one field of an item. */
export interface FieldError {
  code: ItemErrorCode;
  /** Path inside the item: "event", "properties.$currency", or "item". */
  field: string;
  message: string;
}

/** A field error as it stands in an answer, with the item's index. */
export interface ItemError extends FieldError {
  index: number;
}
