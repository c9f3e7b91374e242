import type { ItemType } from '../domain/ingest/item.js';
import { GROUP_TYPE } from '../domain/items/group.js';
import { MAX_UNSET_KEYS } from '../domain/items/identify.js';
import { storedProperties } from '../domain/ingest/stored-properties.js';
import { MAX_KEY_LENGTH, keyFault } from '../domain/storable.js';
import { quoted } from '../domain/echo.js';
import type { ItemCheck, ItemContext } from './check-item.js';
import { enrichTrack } from './enrich.js';
import type { EnrichedItem, ShownItem } from './enriched-item.js';
import type { FieldError } from './field-error.js';
import { type FieldCheck, checkDistinctId, checkName } from './identity-fields.js';
import { isReservedEventName } from './ids.js';
import { type JsonObject, type NormalisedProperties, normaliseProperties } from './properties.js';
import { describeJson } from './text.js';

/**
 * The field checks of each item type (src/domain/items): what check-item.ts
 * asks of an item's own fields, and how it builds the item once no check
 * found a fault. Kept here, keyed by type, because they are built of the
 * pipeline's field rules (src/domain/items/registry.ts says why); a type
 * missing here fails to compile.
 */
export interface TypeCheck {
  /**
   * Checks the type's own fields and what it asks of the identity, pushing
   * each fault; a key it reads only to list among those not kept goes to
   * `droppedKeys`.
   */
  own(raw: Record<string, unknown>, errors: FieldError[], droppedKeys: string[], ctx: ItemContext, index: number): void;
  /** What it checks once the properties are (an identify's set_once and unset). */
  more?(raw: Record<string, unknown>, properties: JsonObject, recordIp: boolean, errors: FieldError[]): MoreFields;
  /**
   * The item, in its type's shape, enrichment included: built once, with
   * every field its own checks passed (each checked value is the one sent).
   */
  build(
    raw: Record<string, unknown>,
    index: number,
    distinctId: string | null,
    anonymousId: string | null,
    sessionId: string | null,
    insertId: string | null,
    timestamp: number,
    props: NormalisedProperties,
    droppedKeys: string[],
    more: MoreFields,
    ctx: ItemContext,
  ): ItemCheck;
}

/** What `more` finds: an identify's person operations, the keys it does not keep, and the faults it counted but did not make. */
export interface MoreFields {
  setOnce: JsonObject | null;
  unset: string[] | null;
  droppedKeys: string[];
  unlisted: number;
}

export const NO_MORE: MoreFields = { setOnce: null, unset: null, droppedKeys: [], unlisted: 0 };

// A JSON null stands for "not sent" in optional fields: many serialisers write
// unset fields as null, and refusing them would refuse whole client libraries.
export const sent = (v: unknown): boolean => v !== undefined && v !== null;

/** The value of a field check, or null with its fault added to `errors`. */
export function take(r: FieldCheck, errors: FieldError[]): string | null {
  if (r.ok) return r.value;
  errors.push(r.error);
  return null;
}

/** Adds a fault and gives the field's value as refused: null. */
export function refuse(errors: FieldError[], code: FieldError['code'], field: string, message: string): null {
  errors.push({ code, field, message });
  return null;
}

export const TYPE_CHECKS: Record<ItemType, TypeCheck> = {
  track: {
    own(raw, errors, _dropped, ctx, index) {
      checkEvent(raw.event, errors, ctx.ownEvents?.has(index) === true);
      if (!sent(raw.distinct_id) && !sent(raw.anonymous_id)) {
        errors.push({ code: 'missing_identity', field: 'distinct_id', message: 'Send a "distinct_id" (your user id) or an "anonymous_id" (a browser person key).' });
      }
    },
    build(raw, index, distinctId, anonymousId, sessionId, insertId, timestamp, props, droppedKeys, _more, ctx) {
      const { enrichment, dropped } = enrichTrack(props.userAgent, ctx.source);
      const item: ShownItem & { type: 'track' } = {
        index, type: 'track', event: raw.event as string, distinctId, anonymousId, sessionId, insertId, timestamp,
        properties: props.properties, propertiesJson: props.json!, enrichment, userAgent: props.userAgent, droppedKeys,
      };
      // Only the store reads the stored text: an item dropped here goes without.
      if (dropped !== null) return { ok: true, item, dropped };
      return { ok: true, item: Object.assign(item, { storedJson: storedProperties(item) }), dropped: null };
    },
  },
  identify: {
    own(raw, errors, droppedKeys) {
      if (raw.event !== undefined) droppedKeys.push('event');
      if (!sent(raw.distinct_id)) {
        errors.push({ code: 'missing_identity', field: 'distinct_id', message: 'An identify item needs a "distinct_id": the user id to set traits on.' });
      }
    },
    more: checkPersonOps,
    build(_raw, index, distinctId, anonymousId, sessionId, insertId, timestamp, props, droppedKeys, more) {
      // An identify with no error has its distinct_id.
      const item: EnrichedItem<'identify'> = {
        index, type: 'identify', event: null, distinctId: distinctId!, anonymousId, sessionId, insertId, timestamp,
        properties: props.properties, propertiesJson: props.json!, enrichment: {}, userAgent: props.userAgent, droppedKeys, setOnce: more.setOnce, unset: more.unset,
      };
      return { ok: true, item, dropped: null };
    },
  },
  group: {
    own(raw, errors) {
      checkGroupType(raw.group_type, errors);
      if (sent(raw.group_key)) take(checkDistinctId(raw.group_key, 'group_key'), errors);
      else refuse(errors, 'invalid_group_key', 'group_key', 'A group item needs a "group_key": the id of the group within its type, such as "acme".');
    },
    build(raw, index, distinctId, _anonymousId, _sessionId, insertId, timestamp, props, droppedKeys) {
      // A group item with no error has its type and key.
      const item: EnrichedItem<'group'> = {
        index, type: 'group', event: null, distinctId, anonymousId: null, sessionId: null, insertId, timestamp,
        properties: props.properties, propertiesJson: props.json!, enrichment: {}, userAgent: props.userAgent, droppedKeys,
        groupType: raw.group_type as string, groupKey: raw.group_key as string,
      };
      return { ok: true, item, dropped: null };
    },
  },
  alias: {
    own(raw, errors) {
      if (!sent(raw.distinct_id)) {
        errors.push({ code: 'missing_identity', field: 'distinct_id', message: 'An alias item needs a "distinct_id": the user id that "previous_id" joins.' });
      }
      const previousId = sent(raw.previous_id)
        ? take(checkDistinctId(raw.previous_id, 'previous_id'), errors)
        : refuse(errors, 'invalid_previous_id', 'previous_id', 'An alias item needs a "previous_id": the id that from now on means the same person as "distinct_id".');
      if (previousId !== null && previousId === raw.distinct_id) {
        refuse(errors, 'invalid_previous_id', 'previous_id', '"previous_id" equals "distinct_id"; an alias links two different ids.');
      }
    },
    build(raw, index, distinctId, _anonymousId, _sessionId, insertId, timestamp, _props, droppedKeys) {
      // An alias with no error has both ids.
      const item: EnrichedItem<'alias'> = {
        index, type: 'alias', event: null, distinctId: distinctId!, anonymousId: null, sessionId: null, insertId, timestamp,
        properties: {}, propertiesJson: '{}', enrichment: {}, userAgent: null, droppedKeys, previousId: raw.previous_id as string,
      };
      return { ok: true, item, dropped: null };
    },
  },
};

function checkEvent(v: unknown, errors: FieldError[], ownName: boolean): void {
  if (!sent(v)) {
    errors.push({ code: 'missing_event_name', field: 'event', message: 'A track item needs an "event" name.' });
    return;
  }
  const name = take(checkName(v, 'event'), errors);
  if (name !== null && !ownName && isReservedEventName(name)) {
    errors.push({
      code: 'reserved_event_name',
      field: 'event',
      message: `${quoted(name)} is a reserved event name. Names starting with "$" (other than $agent_step and $agent_run) and identify, alias, group and merge are kept for Inlet itself.`,
    });
  }
}

function checkGroupType(v: unknown, errors: FieldError[]): void {
  if (typeof v === 'string' && GROUP_TYPE.test(v)) return;
  const what = sent(v) ? `not ${typeof v === 'string' ? quoted(v) : describeJson(v)}` : 'and none was sent';
  refuse(errors, 'invalid_group_type', 'group_type', `"group_type" must be 1 to 64 characters of a-z, 0-9 and "_", such as "company"; ${what}.`);
}

/**
 * set_once, checked as properties are (its faults under its own code and
 * field), and unset: trait names, none of them one that properties sets.
 */
function checkPersonOps(raw: Record<string, unknown>, properties: JsonObject, recordIp: boolean, errors: FieldError[]): MoreFields {
  const out: MoreFields = { setOnce: null, unset: null, droppedKeys: [], unlisted: 0 };
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
