/** Formats of the ids a client sends. The store never sees one that breaks these. */

/** An insert_id's longest length, in characters. */
export const MAX_INSERT_ID_LENGTH = 80;
export const INSERT_ID = new RegExp(`^[A-Za-z0-9_-]{1,${MAX_INSERT_ID_LENGTH}}$`);
/** A browser person key: per_ then 1-124 safe characters (128 in all). */
export const PERSON_ID = /^per_[A-Za-z0-9_-]{1,124}$/;
/** A browser session id: ses_ then 1-124 safe characters. */
export const SESSION_ID = /^ses_[A-Za-z0-9_-]{1,124}$/;

/**
 * distinct_id values that are a client bug, never a real user: one of them
 * would merge every affected user into one person.
 */
const PLACEHOLDER_DISTINCT_IDS = new Set([
  'undefined',
  'null',
  'nil',
  'none',
  'nan',
  '0',
  '-1',
  '[object object]',
  'anonymous',
  'guest',
]);

export function isPlaceholderDistinctId(id: string): boolean {
  return PLACEHOLDER_DISTINCT_IDS.has(id.trim().toLowerCase());
}

/** Event names the pipeline uses itself, refused in any case. */
const INTERNAL_EVENT_NAMES = new Set(['identify', 'alias', 'group', 'merge']);
/** The only $ event names a server may send. */
const ALLOWED_DOLLAR_EVENTS = new Set(['$agent_step', '$agent_run']);

export function isReservedEventName(name: string): boolean {
  if (name.startsWith('$')) return !ALLOWED_DOLLAR_EVENTS.has(name);
  return INTERNAL_EVENT_NAMES.has(name.toLowerCase());
}
