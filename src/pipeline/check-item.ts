import type { IngestItem } from '../domain/ingest/job.js';
import type { FieldError } from './field-error.js';
import { type FieldCheck, checkAnonymousId, checkDistinctId, checkName } from './identity-fields.js';
import { INSERT_ID, SESSION_ID, isReservedEventName } from './ids.js';
import { type JsonObject, normaliseProperties } from './properties.js';
import { describeJson, isPlainObject } from './text.js';
import { type ImportWindow, parseTimestamp } from './timestamp.js';

export type ItemType = 'track' | 'identify';

/** A valid item, normalised: what the ingest engine is asked to keep, before enrichment. */
export interface PreparedItem extends Omit<IngestItem, 'enrichment' | 'properties'> {
  /** Normalised properties of a track, or the traits of an identify. */
  properties: JsonObject;
  /** The raw $user_agent, for enrichment; never stored. */
  userAgent: string | null;
  /** Paths of what the client sent that will not be stored. */
  droppedKeys: string[];
}

export type ItemCheck = { ok: true; item: PreparedItem } | { ok: false; errors: FieldError[] };

export interface ItemContext {
  /** Server clock at arrival, epoch ms. */
  now: number;
  /** Whether the source keeps $ip. */
  recordIp: boolean;
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
  if (type === 'track') event = checkEvent(raw.event, errors, ctx.ownEvents?.has(index) === true);
  else if (type === 'identify' && raw.event !== undefined) droppedKeys.push('event');

  const distinctId = sent(raw.distinct_id) ? take(checkDistinctId(raw.distinct_id), errors) : null;
  const anonymousId = sent(raw.anonymous_id) ? take(checkAnonymousId(raw.anonymous_id), errors) : null;
  if (raw.distinct_id === undefined || raw.distinct_id === null) {
    if (type === 'identify') {
      errors.push({ code: 'missing_identity', field: 'distinct_id', message: 'An identify item needs a "distinct_id": the user id to set traits on.' });
    } else if (type === 'track' && !sent(raw.anonymous_id)) {
      errors.push({ code: 'missing_identity', field: 'distinct_id', message: 'Send a "distinct_id" (your user id) or an "anonymous_id" (a browser person key).' });
    }
  }
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
  return {
    ok: true,
    item: {
      index,
      type,
      event,
      distinctId,
      anonymousId,
      sessionId,
      insertId,
      timestamp,
      properties: props.properties,
      // Set whenever no error was: the size check wrote it.
      propertiesJson: props.json!,
      userAgent: props.userAgent,
      droppedKeys,
    },
  };
}

function checkType(v: unknown, errors: FieldError[]): ItemType | null {
  if (!sent(v) || v === 'track') return 'track';
  if (v === 'identify') return 'identify';
  if (v === 'group' || v === 'alias') {
    errors.push({ code: 'item_type_not_yet_supported', field: 'type', message: `"${v}" items are not supported yet; send "track" or "identify".` });
  } else {
    errors.push({ code: 'invalid_item_type', field: 'type', message: '"type" must be "track" or "identify" (or left out for "track").' });
  }
  return null;
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
      message: `"${name}" is a reserved event name. Names starting with "$" (other than $agent_step and $agent_run) and identify, alias, group and merge are kept for Inlet itself.`,
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
