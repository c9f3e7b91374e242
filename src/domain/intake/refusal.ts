import type { RequestErrorCode } from '../../errors/codes.js';
import type { ItemError } from '../items/fields/field-error.js';

/**
 * Why a request is answered with an error, and anything the answer carries
 * besides. Made by the edge's checks and the pipeline's; the edge turns it
 * into the envelope.
 */
export interface Refusal {
  code: RequestErrorCode;
  message?: string;
  headers?: Record<string, string>;
  errors?: ItemError[];
}

/** Whether a step's result is a refusal rather than what it made. */
export function isRefusal(x: unknown): x is Refusal {
  return typeof x === 'object' && x !== null && 'code' in x;
}
