import { PageReadsBusyError } from '../stores/page-read-gate.js';

/**
 * Null for a page read the store refused because too many already wait
 * (the page then shows the rest and says so); any other failure passes on.
 */
export function busyAsNull(e: unknown): null {
  if (e instanceof PageReadsBusyError) return null;
  throw e;
}
