import { createHash } from 'node:crypto';
import type { StoredSample } from '../stores/port-outcomes.js';

/** The key an exported item's errors go under: for the reader, and left out by `inlet send`. */
export const ERRORS_KEY = '_inlet_errors';
/** The key a dropped item's reason goes under, likewise. */
export const DROPPED_KEY = '_inlet_dropped';

/** Keys an export adds to an item, which `inlet send` leaves out of what it sends. */
export function isExportKey(key: string): boolean {
  return key === ERRORS_KEY || key === DROPPED_KEY;
}

/** Why a kept item is not exported. */
export type LeftOut = 'dropped' | 'cut' | 'withheld' | 'not_object' | 'warned';

/**
 * A kept item as a line `inlet send` reads: the item as sent, with the
 * insert_id it was sent with (or one derived from its request and index, so
 * that sending the fixed file twice stores it once), its errors under
 * ERRORS_KEY and, when dropped, its reason under DROPPED_KEY. Or why it is
 * left out: dropped (unless asked for), cut for its size (no longer JSON),
 * withheld (an erased person's: nothing of it was kept), or not an object
 * (no line `inlet send` could read).
 */
export function exportLine(s: StoredSample, includeDropped: boolean): { line: string } | { left: LeftOut } {
  if (s.outcome === 'dropped' && !includeDropped) return { left: 'dropped' };
  // Kept with a tracking plan's warning: stored already, so never sent again from here.
  if (s.outcome === 'warned') return { left: 'warned' };
  if (s.cut) return { left: 'cut' };
  const item = parsed(s.item);
  if (item === null) return { left: 'withheld' };
  if (typeof item !== 'object' || Array.isArray(item)) return { left: 'not_object' };
  const out = item as Record<string, unknown>;
  const props = out.properties;
  const given = out.insert_id ?? (typeof props === 'object' && props !== null ? (props as Record<string, unknown>).$insert_id : undefined);
  if (given === undefined || given === null) out.insert_id = derivedInsertId(s.requestId, s.index);
  out[ERRORS_KEY] = parsed(s.errors) ?? [];
  if (s.outcome === 'dropped') out[DROPPED_KEY] = s.code;
  else delete out[DROPPED_KEY];
  return { line: JSON.stringify(out) };
}

/**
 * The insert_id of an item sent without one: its request id and its index
 * in that request, which name it once and for ever; hashed when they would
 * not make a valid insert_id.
 */
export function derivedInsertId(requestId: string, index: number): string {
  const plain = `${requestId}-${index}`;
  if (/^[A-Za-z0-9_-]{1,80}$/.test(plain)) return plain;
  return `rx-${createHash('sha256').update(plain).digest('hex').slice(0, 40)}`;
}

/** JSON text as a value; null for text that is absent, empty or not JSON (nothing to send again). */
function parsed(text: string | null | undefined): unknown {
  if (text === null || text === undefined || text === '') return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}
