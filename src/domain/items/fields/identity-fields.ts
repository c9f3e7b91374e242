import { codePointLength, isStorableText } from '../../storable.js';
import type { FieldCheck } from './field-error.js';
import { PERSON_ID, isPlaceholderDistinctId } from './ids.js';
import { describeJson, hasControlChars } from './text.js';
import { quoted } from '../../echo.js';

/** Longest event name or distinct_id, in code points (at most 512 bytes of UTF-8, well under any index limit). */
export const MAX_NAME_LENGTH = 128;

/** The fields held to the name rule, and the code each refuses with. */
const NAME_CODES = {
  event: 'invalid_event_name',
  distinct_id: 'invalid_distinct_id',
  group_key: 'invalid_group_key',
  previous_id: 'invalid_previous_id',
} as const;

/** The fields that are user ids, or as strict as one. */
export type IdField = Exclude<keyof typeof NAME_CODES, 'event'>;

/** event, distinct_id and the ids held to its rule: 1-128 code points, not blank, no control characters, storable. */
export function checkName(v: unknown, field: keyof typeof NAME_CODES): FieldCheck {
  const code = NAME_CODES[field];
  const fault = (message: string): FieldCheck => ({ ok: false, error: { code, field, message } });
  if (typeof v !== 'string') {
    const hint = typeof v === 'number' && field !== 'event' ? ` Send it as a string: "${v}".` : '';
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
 * A group key and an alias's previous_id follow it too, under their own codes.
 */
export function checkDistinctId(v: unknown, field: IdField = 'distinct_id'): FieldCheck {
  const r = checkName(v, field);
  if (r.ok && isPlaceholderDistinctId(r.value)) {
    const advice = field === 'group_key' ? 'Send the group\'s real id.' : field === 'previous_id' ? 'Send the id the user had before.' : 'Send your real user id, or anonymous_id only.';
    return {
      ok: false,
      error: {
        code: NAME_CODES[field],
        field,
        message: `"${field}" ${quoted(r.value)} is a placeholder, not a real id; it would merge every such ${field === 'group_key' ? 'group' : 'user into one person'}${field === 'group_key' ? ' into one' : ''}. ${advice}`,
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
