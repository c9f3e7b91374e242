import { quoted } from '../echo.js';
import { MAX_KEY_LENGTH, keyFault } from '../storable.js';
import type { Resolved } from '../people/resolver.js';
import { type JobAt, type Writes, accepted } from '../ingest/pass-context.js';
import type { ItemOutcome } from '../ingest/job.js';
import type { EnrichedItem } from './enriched-item.js';
import { type FieldError, refuse, sent } from './fields/field-error.js';
import { type JsonObject, normaliseProperties } from './fields/properties.js';
import { describeJson } from './fields/text.js';
import type { ItemKind, ItemOf, MoreFields } from './kind.js';

/** At most this many trait names in one unset. */
export const MAX_UNSET_KEYS = 255;

/** Sets traits on the person of a user id. */
export type IdentifyItem = ItemOf<{
  type: 'identify';
  /** An identify has no event name. */
  event: null;
  /** The user id the traits are set on. */
  distinctId: string;
  /** Traits set only where the person has no value for the key yet; null when not sent. */
  setOnce: Record<string, unknown> | null;
  /** Trait keys removed as of the item's timestamp; null when not sent. */
  unset: string[] | null;
}>;

export const identify: ItemKind<IdentifyItem> = {
  type: 'identify',
  own: { setOnce: true, unset: true },
  // It reads "event" only to list it among the keys not kept, first.
  wireFields: ['type', 'event', 'distinct_id', 'anonymous_id', 'session_id', 'insert_id', 'timestamp', 'properties', 'set_once', 'unset', 'context'],
  requiredFields: ['type', 'distinct_id'],
  ignores: [],
  check: {
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
  metered: false,
  storeRefuses: [],
  schemaName: 'IdentifyItem',
  schema: (k) => ({
    type: 'object',
    description: `Sets traits (its properties) on the person of distinct_id, newest per key by timestamp; set_once sets traits the person has no value for; unset removes traits as of the timestamp. ${k.itemDescription}`,
    required: [...identify.requiredFields],
    properties: {
      type: { type: 'string', const: 'identify' },
      event: { description: 'Ignored on identify, whatever it holds.' },
      distinct_id: k.name(k.distinctId),
      ...k.common(),
      set_once: k.orNull({ ...k.ref('Properties'), description: 'Traits set only where the person has no value for the key yet, whatever the timestamps; checked as properties are (invalid_set_once).' }),
      unset: k.orNull({
        type: 'array',
        maxItems: MAX_UNSET_KEYS,
        items: { type: 'string', minLength: 1, maxLength: MAX_KEY_LENGTH },
        description: 'Trait names to remove as of the timestamp: a value set at or before it goes, one set after it stays. None may also be a key of properties (invalid_unset).',
      }),
    },
  }),
  // It links its distinct_id even when it names a browser person too.
  linksDistinctId: () => true,
  otherId: () => null,
  write: writeIdentify,
  dryRun: (item) => ({ set_once: item.setOnce, unset: item.unset }),
  sendable: (item, common) => ({ type: 'identify', ...common, ...(item.setOnce === null ? {} : { set_once: item.setOnce }), ...(item.unset === null ? {} : { unset: item.unset }) }),
};

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

/** An identify sets traits on its user's person, linking the browser person it names to that user. */
function writeIdentify(w: Writes, item: IdentifyItem, at: JobAt): ItemOutcome {
  const person = item.anonymousId === null ? w.people.byDistinctId(item.distinctId) : w.people.linkToBrowserPerson(item.distinctId, item.anonymousId);
  return identifyTraits(w, item, at, person);
}

function identifyTraits(w: Writes, item: IdentifyItem, at: JobAt, person: Resolved): ItemOutcome {
  for (const [key, value] of Object.entries(item.properties)) {
    w.people.traits.push({ personId: person.id, key, value: JSON.stringify(value), setAt: item.timestamp });
  }
  // An unset is a trait write of no value, ordered by timestamp as any (newestTraits).
  for (const key of item.unset ?? []) w.people.traits.push({ personId: person.id, key, value: null, setAt: item.timestamp });
  for (const [key, value] of Object.entries(item.setOnce ?? {})) {
    w.people.setOnce.push({ personId: person.id, key, value: JSON.stringify(value), setAt: item.timestamp });
  }
  return accepted(w, item, at, null, person);
}
