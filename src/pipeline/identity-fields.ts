import { codePointLength, isStorableText } from '../domain/storable.js';
import type { FieldError } from './field-error.js';
import { PERSON_ID, isPlaceholderDistinctId } from './ids.js';
import { describeJson, hasControlChars } from './text.js';
import { quoted } from '../domain/echo.js';

/** Longest event name or distinct_id, in code points (at most 512 bytes of UTF-8, well under any index limit). */
export const MAX_NAME_LENGTH = 128;

/** A field's value once checked, or the one fault it has. */
export type FieldCheck = { ok: true; value: string } | { ok: false; error: FieldError };

/** event and distinct_id: 1-128 code points, not blank, no control characters, storable. */
export function checkName(v: unknown, field: 'event' | 'distinct_id'): FieldCheck {
  const code = field === 'event' ? 'invalid_event_name' : 'invalid_distinct_id';
  const fault = (message: string): FieldCheck => ({ ok: false, error: { code, field, message } });
  if (typeof v !== 'string') {
    const hint = typeof v === 'number' && field === 'distinct_id' ? ` Send it as a string: "${v}".` : '';
    return fault(`"${field}" must be a string, not ${describeJson(v)}.${hint}`);
  }
  const length = codePointLength(v);
  if (length < 1 || length > MAX_NAME_LENGTH || v.trim().length === 0) {
    return fault(`"${field}" must be 1 to ${MAX_NAME_LENGTH} characters and not blank; it has ${length}.`);
  }
  if (!isStorableText(v) || hasControlChars(v)) {
    return fault(`"${field}" must not hold control characters, U+0000 or lone surrogates.`);
  }
  return { ok: true, value: v };
}

/**
 * The distinct_id rule, wherever a distinct_id comes from (an item, the
 * admin command): a name, and not a placeholder that betrays a client bug.
 */
export function checkDistinctId(v: unknown): FieldCheck {
  const r = checkName(v, 'distinct_id');
  if (r.ok && isPlaceholderDistinctId(r.value)) {
    return {
      ok: false,
      error: {
        code: 'invalid_distinct_id',
        field: 'distinct_id',
        message: `"distinct_id" ${quoted(r.value)} is a placeholder, not a user id; it would merge every such user into one person. Send your real user id, or anonymous_id only.`,
      },
    };
  }
  return r;
}

/** The anonymous_id rule: a browser person key. */
export function checkAnonymousId(v: unknown): FieldCheck {
  if (typeof v === 'string' && PERSON_ID.test(v)) return { ok: true, value: v };
  return {
    ok: false,
    error: {
      code: 'invalid_anonymous_id',
      field: 'anonymous_id',
      message: '"anonymous_id" must be a browser person key: "per_" followed by letters, digits, "_" or "-" (128 characters at most).',
    },
  };
}
