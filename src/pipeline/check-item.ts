import { type ItemType, ITEM_TYPES, KINDS, typesListed } from '../domain/ingest/item.js';
import type { ItemCheck } from '../domain/items/enriched-item.js';
import { type FieldError, sent, take } from '../domain/items/fields/field-error.js';
import { checkAnonymousId, checkDistinctId } from '../domain/items/fields/identity-fields.js';
import { INSERT_ID, SESSION_ID } from '../domain/items/fields/ids.js';
import { normaliseProperties } from '../domain/items/fields/properties.js';
import { describeJson, isPlainObject } from '../domain/items/fields/text.js';
import { parseTimestamp } from '../domain/items/fields/timestamp.js';
import { type ItemContext, NO_MORE, type TypeCheck } from '../domain/items/kind.js';

/**
 * What each type reads of the fields most types share, the fields it reads at
 * all (any other is listed among the keys not kept), and its own checks
 * (null: no valid type); one lookup per item.
 */
interface Reads {
  anonymousId: boolean;
  sessionId: boolean;
  properties: boolean;
  known: ReadonlySet<string>;
  check: TypeCheck | null;
}

const READS = {} as Record<ItemType, Reads>;
for (const t of ITEM_TYPES) {
  const { ignores, wireFields, check } = KINDS[t];
  READS[t] = { anonymousId: !ignores.includes('anonymous_id'), sessionId: !ignores.includes('session_id'), properties: !ignores.includes('properties'), known: new Set(wireFields), check };
}
/** An item of no valid type has every field checked, so that every fault is reported. */
const READS_ALL: Reads = { anonymousId: true, sessionId: true, properties: true, known: new Set(), check: null };

/**
 * Checks one item. Every fault is reported, one per field; check-batch.ts
 * lists them in field order: type, event, group_type, group_key,
 * distinct_id, previous_id, anonymous_id, session_id, insert_id, timestamp,
 * properties, set_once, unset.
 */
export function checkItem(raw: unknown, index: number, ctx: ItemContext): ItemCheck {
  if (!isPlainObject(raw)) {
    return { ok: false, errors: [{ code: 'invalid_item', field: 'item', message: `Each item must be a JSON object, not ${describeJson(raw)}.` }], unlisted: 0 };
  }
  const errors: FieldError[] = [];
  const droppedKeys: string[] = [];
  const type = checkType(raw.type, errors);
  const reads = type === null ? READS_ALL : READS[type];
  // What the type asks of its own fields and the identity (an item of no valid type is refused already).
  const checks = reads.check;
  checks?.own(raw, errors, droppedKeys, ctx, index);
  const distinctId = sent(raw.distinct_id) ? take(checkDistinctId(raw.distinct_id), errors) : null;
  const anonymousId = sent(raw.anonymous_id) && reads.anonymousId ? take(checkAnonymousId(raw.anonymous_id), errors) : null;
  const sessionId = !reads.sessionId
    ? null
    : checkPattern(raw.session_id, SESSION_ID, 'session_id', 'invalid_session_id',
      '"session_id" must be a browser session id: "ses_" followed by letters, digits, "_" or "-" (128 characters at most).', errors);
  let insertId = checkPattern(raw.insert_id, INSERT_ID, 'insert_id', 'invalid_insert_id',
    '"insert_id" must be 1 to 80 characters of A-Z, a-z, 0-9, "_" and "-".', errors);

  let timestamp = ctx.now;
  if (sent(raw.timestamp)) {
    const t = parseTimestamp(raw.timestamp, ctx.now, ctx.importing);
    if (t.ok) timestamp = t.ms;
    else errors.push({ code: t.code, field: 'timestamp', message: t.message });
  } else if (ctx.importing !== undefined) {
    errors.push({ code: 'missing_timestamp', field: 'timestamp', message: 'An imported item needs a "timestamp": the time the event happened, as ISO 8601 with an offset or epoch milliseconds.' });
  }

  const props = normaliseProperties(reads.properties ? (raw.properties ?? undefined) : undefined, ctx.recordIp, errors);
  const more = checks?.more === undefined ? NO_MORE : checks.more(raw, props.properties, ctx.recordIp, errors);
  if (props.insertId !== null) {
    if (insertId === null && !sent(raw.insert_id)) insertId = props.insertId;
    else if (insertId !== null && insertId !== props.insertId) {
      errors.push({
        code: 'invalid_reserved_property',
        field: 'properties.$insert_id',
        message: '"properties.$insert_id" differs from "insert_id"; send one of them, or the same value in both.',
      });
    }
  }

  if (errors.length > 0 || checks === null) return { ok: false, errors, unlisted: props.unlisted + more.unlisted };
  const { known } = reads;
  for (const key of Object.keys(raw)) if (!known.has(key)) droppedKeys.push(key);
  droppedKeys.push(...props.droppedKeys, ...more.droppedKeys);
  // Each item is built once, in its type's shape (src/domain/items), enrichment included.
  return checks.build(raw, index, distinctId, anonymousId, sessionId, insertId, timestamp, props, droppedKeys, more, ctx);
}

function checkType(v: unknown, errors: FieldError[]): ItemType | null {
  if (!sent(v)) return 'track';
  for (const t of ITEM_TYPES) if (t === v) return t;
  errors.push({ code: 'invalid_item_type', field: 'type', message: `"type" must be ${QUOTED_TYPES} (or left out for "track").` });
  return null;
}

/** The item types as the refusals name them: "track" or "identify". */
const QUOTED_TYPES = typesListed((t) => `"${t}"`, 'or');

function checkPattern(
  v: unknown,
  pattern: RegExp,
  field: string,
  code: FieldError['code'],
  message: string,
  errors: FieldError[],
): string | null {
  if (!sent(v)) return null;
  if (typeof v === 'string' && pattern.test(v)) return v;
  errors.push({ code, field, message });
  return null;
}
