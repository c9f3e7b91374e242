import type { DropReason } from '../errors/codes.js';
import { type ItemType, ITEM_TYPES, unhandledType } from '../domain/ingest/item.js';
import { storedProperties } from '../domain/ingest/stored-properties.js';
import { enrichTrack } from './enrich.js';
import type { ShownItem, EnrichedItem } from './enriched-item.js';
import type { FieldError } from './field-error.js';
import { type FieldCheck, checkAnonymousId, checkDistinctId, checkName } from './identity-fields.js';
import { INSERT_ID, SESSION_ID, isReservedEventName } from './ids.js';
import { normaliseProperties } from './properties.js';
import { describeJson, isPlainObject } from './text.js';
import { quoted } from '../domain/echo.js';
import { type ImportWindow, parseTimestamp } from './timestamp.js';

/** A valid item, enriched, and whether the source's policy drops it before the store; or its faults. */
export type ItemCheck =
  | { ok: true; item: EnrichedItem; dropped: null }
  | { ok: true; item: ShownItem; dropped: DropReason }
  | { ok: false; errors: FieldError[] };

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

const KNOWN_FIELDS = new Set(['type', 'event', 'distinct_id', 'anonymous_id', 'session_id', 'insert_id', 'timestamp', 'properties']);
export { MAX_NAME_LENGTH } from './identity-fields.js';

// A JSON null stands for "not sent" in optional fields: many serialisers write
// unset fields as null, and refusing them would refuse whole client libraries.
const sent = (v: unknown): boolean => v !== undefined && v !== null;

/**
 * Checks one item. Every fault is reported, one per field, in field order:
 * type, event, distinct_id, anonymous_id, session_id, insert_id, timestamp, properties.
 */
export function checkItem(raw: unknown, index: number, ctx: ItemContext): ItemCheck {
  if (!isPlainObject(raw)) {
    return { ok: false, errors: [{ code: 'invalid_item', field: 'item', message: `Each item must be a JSON object, not ${describeJson(raw)}.` }] };
  }
  const errors: FieldError[] = [];
  const droppedKeys: string[] = [];
  const type = checkType(raw.type, errors);

  let event: string | null = null;
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
    case null:
      break;
    default:
      unhandledType(type);
  }
  const distinctId = sent(raw.distinct_id) ? take(checkDistinctId(raw.distinct_id), errors) : null;
  const anonymousId = sent(raw.anonymous_id) ? take(checkAnonymousId(raw.anonymous_id), errors) : null;
  const sessionId = checkPattern(raw.session_id, SESSION_ID, 'session_id', 'invalid_session_id',
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

  const props = normaliseProperties(raw.properties ?? undefined, ctx.recordIp, errors);
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

  if (errors.length > 0 || type === null) return { ok: false, errors };
  for (const key of Object.keys(raw)) if (!KNOWN_FIELDS.has(key)) droppedKeys.push(key);
  droppedKeys.push(...props.droppedKeys);
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
        properties, propertiesJson, enrichment: {}, userAgent, droppedKeys,
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
  if (v === 'group' || v === 'alias') {
    errors.push({ code: 'item_type_not_yet_supported', field: 'type', message: `"${v}" items are not supported yet; send ${quotedTypes()}.` });
  } else {
    errors.push({ code: 'invalid_item_type', field: 'type', message: `"type" must be ${quotedTypes()} (or left out for "track").` });
  }
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
