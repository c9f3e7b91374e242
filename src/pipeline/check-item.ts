import type { DropReason } from '../errors/codes.js';
import { type ItemType, ITEM_TYPES, unhandledType } from '../domain/ingest/item.js';
import { storedProperties } from '../domain/ingest/stored-properties.js';
import { enrichTrack } from './enrich.js';
import type { ShownItem, EnrichedItem } from './enriched-item.js';
import type { FieldError } from './field-error.js';
import { type FieldCheck, checkAnonymousId, checkDistinctId, checkName } from './identity-fields.js';
import { INSERT_ID, SESSION_ID, isReservedEventName } from './ids.js';
import { type JsonObject, normaliseProperties } from './properties.js';
import { MAX_KEY_LENGTH, keyFault } from '../domain/storable.js';
import { describeJson, isPlainObject } from './text.js';
import { quoted } from '../domain/echo.js';
import { type ImportWindow, parseTimestamp } from './timestamp.js';

/** A valid item, enriched, and whether the source's policy drops it before the store; or its faults. */
export type ItemCheck =
  | { ok: true; item: EnrichedItem; dropped: null }
  | { ok: true; item: ShownItem; dropped: DropReason }
  /** `unlisted`: faults past MAX_ERRORS_PER_ITEM that were counted, not made (field-error.ts). */
  | { ok: false; errors: FieldError[]; unlisted: number };

export interface ItemContext {
  /** Server clock at arrival, epoch ms. */
  now: number;
  /** Whether the source keeps $ip. */
  recordIp: boolean;
  /** The source the items came to: its id is stored with each event, and it may filter bots. */
  source: { id: string; filterBots: boolean };
  /** Indices of items whose event name an intake set itself (such as $pageview), exempt from the "$" rule. */
  ownEvents?: ReadonlySet<number>;
  /** Set on the historical import endpoint: a timestamp is required, and may go back to the retention. */
  importing?: ImportWindow;
}

const COMMON_FIELDS = ['type', 'event', 'distinct_id', 'anonymous_id', 'session_id', 'insert_id', 'timestamp', 'properties'];
/** The fields each type reads; any other is listed among the keys not kept. */
const KNOWN_FIELDS: Record<ItemType, ReadonlySet<string>> = {
  track: new Set(COMMON_FIELDS),
  identify: new Set([...COMMON_FIELDS, 'set_once', 'unset']),
  // A group or an alias names no browser person or session, and an alias sets no traits.
  group: new Set(['type', 'distinct_id', 'insert_id', 'timestamp', 'properties', 'group_type', 'group_key']),
  alias: new Set(['type', 'distinct_id', 'insert_id', 'timestamp', 'previous_id']),
};
/** Fields of the common ones a type does not read: not checked, and listed among the keys not kept. */
const IGNORED_FIELDS = {
  group: ['event', 'anonymous_id', 'session_id'],
  alias: ['event', 'anonymous_id', 'session_id', 'properties'],
} as const;
/** A group type: the name of a kind of group, as a project's few group types are told apart. */
export const GROUP_TYPE = /^[a-z0-9_]{1,64}$/;
/** At most this many trait names in one unset. */
export const MAX_UNSET_KEYS = 255;
export { MAX_NAME_LENGTH } from './identity-fields.js';

// A JSON null stands for "not sent" in optional fields: many serialisers write
// unset fields as null, and refusing them would refuse whole client libraries.
const sent = (v: unknown): boolean => v !== undefined && v !== null;

/**
 * Checks one item. Every fault is reported, one per field, in field order:
 * type, event, group_type, group_key, distinct_id, previous_id, anonymous_id,
 * session_id, insert_id, timestamp, properties, set_once, unset.
 */
export function checkItem(raw: unknown, index: number, ctx: ItemContext): ItemCheck {
  if (!isPlainObject(raw)) {
    return { ok: false, errors: [{ code: 'invalid_item', field: 'item', message: `Each item must be a JSON object, not ${describeJson(raw)}.` }], unlisted: 0 };
  }
  const errors: FieldError[] = [];
  const droppedKeys: string[] = [];
  const type = checkType(raw.type, errors);

  let event: string | null = null;
  let groupType: string | null = null;
  let groupKey: string | null = null;
  let previousId: string | null = null;
  // What each type asks of the event name and the identity (an item of no valid type is refused already).
  switch (type) {
    case 'track':
      event = checkEvent(raw.event, errors, ctx.ownEvents?.has(index) === true);
      if (!sent(raw.distinct_id) && !sent(raw.anonymous_id)) {
        errors.push({ code: 'missing_identity', field: 'distinct_id', message: 'Send a "distinct_id" (your user id) or an "anonymous_id" (a browser person key).' });
      }
      break;
    case 'identify':
      if (raw.event !== undefined) droppedKeys.push('event');
      if (!sent(raw.distinct_id)) {
        errors.push({ code: 'missing_identity', field: 'distinct_id', message: 'An identify item needs a "distinct_id": the user id to set traits on.' });
      }
      break;
    case 'group':
      groupType = checkGroupType(raw.group_type, errors);
      groupKey = sent(raw.group_key)
        ? take(checkDistinctId(raw.group_key, 'group_key'), errors)
        : refuse(errors, 'invalid_group_key', 'group_key', 'A group item needs a "group_key": the id of the group within its type, such as "acme".');
      break;
    case 'alias':
      if (!sent(raw.distinct_id)) {
        errors.push({ code: 'missing_identity', field: 'distinct_id', message: 'An alias item needs a "distinct_id": the user id that "previous_id" joins.' });
      }
      previousId = sent(raw.previous_id)
        ? take(checkDistinctId(raw.previous_id, 'previous_id'), errors)
        : refuse(errors, 'invalid_previous_id', 'previous_id', 'An alias item needs a "previous_id": the id that from now on means the same person as "distinct_id".');
      if (previousId !== null && previousId === raw.distinct_id) {
        previousId = refuse(errors, 'invalid_previous_id', 'previous_id', '"previous_id" equals "distinct_id"; an alias links two different ids.');
      }
      break;
    case null:
      break;
    default:
      unhandledType(type);
  }
  const ignored: readonly string[] = type === 'group' || type === 'alias' ? IGNORED_FIELDS[type] : [];
  const distinctId = sent(raw.distinct_id) ? take(checkDistinctId(raw.distinct_id), errors) : null;
  const anonymousId = sent(raw.anonymous_id) && !ignored.includes('anonymous_id') ? take(checkAnonymousId(raw.anonymous_id), errors) : null;
  const sessionId = ignored.includes('session_id')
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

  const props = normaliseProperties(ignored.includes('properties') ? undefined : (raw.properties ?? undefined), ctx.recordIp, errors);
  const personOps = type === 'identify' ? checkPersonOps(raw, props.properties, ctx.recordIp, errors) : NO_PERSON_OPS;
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

  if (errors.length > 0 || type === null) return { ok: false, errors, unlisted: props.unlisted + personOps.unlisted };
  const known = KNOWN_FIELDS[type];
  for (const key of Object.keys(raw)) if (!known.has(key)) droppedKeys.push(key);
  droppedKeys.push(...props.droppedKeys, ...personOps.droppedKeys);
  const { properties, userAgent } = props;
  // Set whenever no error was: the size check wrote it.
  const propertiesJson = props.json!;
  // Each item is built here once, in its type's shape (src/domain/ingest/item.ts), enrichment included.
  switch (type) {
    case 'track': {
      const { enrichment, dropped } = enrichTrack(userAgent, ctx.source);
      // An item with no error has its event name.
      const item: ShownItem & { type: 'track' } = {
        index, type, event: event!, distinctId, anonymousId, sessionId, insertId, timestamp,
        properties, propertiesJson, enrichment, userAgent, droppedKeys,
      };
      // Only the store reads the stored text: an item dropped here goes without.
      if (dropped !== null) return { ok: true, item, dropped };
      return { ok: true, item: Object.assign(item, { storedJson: storedProperties(item) }), dropped: null };
    }
    case 'identify': {
      // An identify with no error has its distinct_id.
      const item: EnrichedItem<'identify'> = {
        index, type, event: null, distinctId: distinctId!, anonymousId, sessionId, insertId, timestamp,
        properties, propertiesJson, enrichment: {}, userAgent, droppedKeys, setOnce: personOps.setOnce, unset: personOps.unset,
      };
      return { ok: true, item, dropped: null };
    }
    case 'group': {
      // A group item with no error has its type and key.
      const item: EnrichedItem<'group'> = {
        index, type, event: null, distinctId, anonymousId: null, sessionId: null, insertId, timestamp,
        properties, propertiesJson, enrichment: {}, userAgent, droppedKeys, groupType: groupType!, groupKey: groupKey!,
      };
      return { ok: true, item, dropped: null };
    }
    case 'alias': {
      // An alias with no error has both ids.
      const item: EnrichedItem<'alias'> = {
        index, type, event: null, distinctId: distinctId!, anonymousId: null, sessionId: null, insertId, timestamp,
        properties: {}, propertiesJson: '{}', enrichment: {}, userAgent: null, droppedKeys, previousId: previousId!,
      };
      return { ok: true, item, dropped: null };
    }
    default:
      return unhandledType(type);
  }
}

function checkType(v: unknown, errors: FieldError[]): ItemType | null {
  if (!sent(v)) return 'track';
  for (const t of ITEM_TYPES) if (t === v) return t;
  errors.push({ code: 'invalid_item_type', field: 'type', message: `"type" must be ${quotedTypes()} (or left out for "track").` });
  return null;
}

function checkGroupType(v: unknown, errors: FieldError[]): string | null {
  if (typeof v === 'string' && GROUP_TYPE.test(v)) return v;
  const what = sent(v) ? `not ${typeof v === 'string' ? quoted(v) : describeJson(v)}` : 'and none was sent';
  return refuse(errors, 'invalid_group_type', 'group_type', `"group_type" must be 1 to 64 characters of a-z, 0-9 and "_", such as "company"; ${what}.`);
}

/** What an identify asks of its person besides its traits. */
interface PersonOps {
  setOnce: JsonObject | null;
  unset: string[] | null;
  droppedKeys: string[];
  /** Faults of set_once counted, not made. */
  unlisted: number;
}

const NO_PERSON_OPS: PersonOps = { setOnce: null, unset: null, droppedKeys: [], unlisted: 0 };

/**
 * set_once, checked as properties are (its faults under its own code and
 * field), and unset: trait names, none of them one that properties sets.
 */
function checkPersonOps(raw: Record<string, unknown>, properties: JsonObject, recordIp: boolean, errors: FieldError[]): PersonOps {
  const out: PersonOps = { setOnce: null, unset: null, droppedKeys: [], unlisted: 0 };
  if (sent(raw.set_once)) {
    const own: FieldError[] = [];
    const r = normaliseProperties(raw.set_once, recordIp, own);
    out.unlisted = r.unlisted;
    for (const e of own) errors.push(asField(e, 'set_once', 'invalid_set_once'));
    if (own.length === 0) {
      out.setOnce = r.properties;
      out.droppedKeys = r.droppedKeys.map((k) => `set_once${k.slice('properties'.length)}`);
    }
  }
  if (sent(raw.unset)) out.unset = checkUnset(raw.unset, properties, errors);
  return out;
}

/** A properties fault told of another field that is checked the same way. */
function asField(e: FieldError, field: string, code: FieldError['code']): FieldError {
  return {
    code,
    field: field + e.field.slice('properties'.length),
    message: e.message.replaceAll('"properties"', `"${field}"`).replaceAll('"properties.', `"${field}.`),
  };
}

function checkUnset(v: unknown, properties: JsonObject, errors: FieldError[]): string[] | null {
  const fault = (message: string): null => refuse(errors, 'invalid_unset', 'unset', message);
  if (!Array.isArray(v)) return fault(`"unset" must be an array of trait names, not ${describeJson(v)}.`);
  if (v.length > MAX_UNSET_KEYS) return fault(`"unset" names ${v.length} traits; at most ${MAX_UNSET_KEYS} are allowed.`);
  for (const key of v) {
    if (typeof key !== 'string' || key === '') return fault(`Each name in "unset" must be a non-empty string, not ${describeJson(key)}.`);
    const bad = keyFault(key);
    if (bad !== null) {
      return fault(bad.kind === 'text' ? 'A name in "unset" holds U+0000 or a lone surrogate.' : `A name in "unset" has ${bad.length} characters; trait names have at most ${MAX_KEY_LENGTH}.`);
    }
    if (Object.hasOwn(properties, key)) {
      return fault(`${quoted(key)} is both set in "properties" and named in "unset"; send it in one of them.`);
    }
  }
  return [...new Set(v as string[])];
}

/** Adds a fault and gives the field's value as refused: null. */
function refuse(errors: FieldError[], code: FieldError['code'], field: string, message: string): null {
  errors.push({ code, field, message });
  return null;
}

/** The item types as the refusals name them: "track" or "identify". */
function quotedTypes(): string {
  const q = ITEM_TYPES.map((t) => `"${t}"`);
  return q.length === 1 ? q[0]! : `${q.slice(0, -1).join(', ')} or ${q.at(-1)}`;
}

function checkEvent(v: unknown, errors: FieldError[], ownName: boolean): string | null {
  if (!sent(v)) {
    errors.push({ code: 'missing_event_name', field: 'event', message: 'A track item needs an "event" name.' });
    return null;
  }
  const name = take(checkName(v, 'event'), errors);
  if (name !== null && !ownName && isReservedEventName(name)) {
    errors.push({
      code: 'reserved_event_name',
      field: 'event',
      message: `${quoted(name)} is a reserved event name. Names starting with "$" (other than $agent_step and $agent_run) and identify, alias, group and merge are kept for Inlet itself.`,
    });
    return null;
  }
  return name;
}

/** The value of a field check, or null with its fault added to `errors`. */
function take(r: FieldCheck, errors: FieldError[]): string | null {
  if (r.ok) return r.value;
  errors.push(r.error);
  return null;
}

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
