/**
 * How an answer repeats what a client sent. An error's field and message may
 * quote a key, a name or an id, but never at any length: a key of a million
 * characters would otherwise come back twice in the answer and in every live
 * view of its source. Every message that quotes client text goes through here.
 */

import { codePointLength } from './storable.js';

/** Code points of client text an answer repeats at most. */
export const MAX_ECHO = 200;

/** The first `max` code points of `s`, and "…" when it had more; never splits a surrogate pair. */
export function cutText(s: string, max: number): string {
  // Under `max` code units is under `max` code points: the common case, without a walk.
  if (s.length <= max) return s;
  let units = 0;
  for (let points = 0; points < max && units < s.length; points++) {
    const c = s.charCodeAt(units);
    const d = s.charCodeAt(units + 1);
    units += c >= 0xd800 && c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff ? 2 : 1;
  }
  return units >= s.length ? s : `${s.slice(0, units)}…`;
}

/** Client text as a field path or message repeats it: whole up to MAX_ECHO code points, else its start and "…". */
export function echoed(s: string): string {
  return cutText(s, MAX_ECHO);
}

/** Client text quoted in a message; when cut, its full length is said: "$kkk…" (900001 characters). */
export function quoted(s: string): string {
  const shown = echoed(s);
  return shown === s ? `"${s}"` : `"${shown}" (${codePointLength(s)} characters)`;
}
