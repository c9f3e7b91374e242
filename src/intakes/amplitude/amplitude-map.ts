/**
 * Amplitude's HTTP V2 and batch bodies read as Inlet items, so code written
 * for `@amplitude/analytics-node` (or Amplitude's HTTP API) works by changing
 * its server URL. Anything the mapping does not name is left out (the
 * library's own fields, the device's and the platform's among them); the
 * items then go through the same checks as any.
 */
import type { BearerResult } from '../../domain/keys.js';
import type { ItemError } from '../../domain/items/fields/field-error.js';
import { isPlainObject } from '../../domain/items/fields/text.js';
import { type MappedMessages, type OperationField, type PersonUpdate, type WireMap, operationField } from '../../pipeline/foreign-body.js';
import { type Refusal, isRefusal } from '../../domain/intake/refusal.js';
import { personUpdateOf } from '../posthog/posthog-map.js';
import { identity, insertIdFor } from '../segment/segment-map.js';

/** The endpoints: HTTP V2 and the batch API. */
export const AMPLITUDE_PATHS: ReadonlySet<string> = new Set(['/2/httpapi', '/2/batch'].flatMap((p) => [p, `${p}/`]));
/**
 * Amplitude's batch API's own path, which PostHog's /batch also is: its route
 * is PostHog's, and a body in Amplitude's shape that comes there (an
 * `events` array, no `batch`) is handed to this intake once its key is found
 * (POSTHOG_WIRE.otherIntake).
 */
export const AMPLITUDE_SHARED_PATH = '/batch';

/** Events in one request at most: Amplitude's own bound for its batch API. */
export const MAX_EVENTS = 2000;

/**
 * Groups the $identify and $groupidentify events of one request may name,
 * all together: each is an item written with the events, uncounted by the
 * project's windows, so that a request's write stays the size of a batch.
 */
export const MAX_MEMBERSHIPS = MAX_EVENTS;

/** The person operations Inlet keeps, as the identify's fields they become. */
const KEPT_OPERATIONS: ReadonlyMap<string, string> = new Map([['$set', 'properties'], ['$setOnce', 'set_once'], ['$unset', 'unset']]);

/** The key where the SDK puts it: "api_key". */
export function apiKeyOf(json: unknown): BearerResult {
  if (isPlainObject(json) && typeof json.api_key === 'string' && json.api_key !== '') return { kind: 'token', token: json.api_key };
  return { kind: 'missing' };
}

/** The body's events: `{"api_key", "events": [...]}` with 1 to MAX_EVENTS. */
export function readAmplitudeBody(json: unknown): unknown[] | Refusal {
  if (!isPlainObject(json) || !Array.isArray(json.events)) {
    return { code: 'invalid_body', message: 'The body must be a JSON object {"api_key": "<key>", "events": [...]}.' };
  }
  if (json.events.length === 0) return { code: 'batch_empty', message: 'The "events" array is empty. Send at least one event.' };
  if (json.events.length > MAX_EVENTS) {
    return { code: 'batch_too_many_items', message: `The request has ${json.events.length} events; at most ${MAX_EVENTS} are allowed. Send fewer at a time (flushQueueSize).` };
  }
  return json.events;
}

/** An id as text: numbers are taken as the ids they stand for. */
function idText(v: unknown): unknown {
  return typeof v === 'number' ? String(v) : v;
}

/**
 * Items for the events, one per event at its index; the person updates that
 * events' user_properties and a $identify's groups make; the events refused
 * for a person or group operation Inlet does not keep.
 */
export function amplitudeItems(events: unknown[]): MappedMessages {
  const updates: PersonUpdate[] = [];
  const refusals = new Map<number, ItemError[]>();
  /** The messages whose own item is a person's or a group's update, not an event: their fields are named otherwise in the message. */
  const updatesAt = new Map<number, 'identify' | 'group'>();
  const items = events.map((m, i) => {
    if (!isPlainObject(m)) return m;
    const base = baseOf(m);
    const group = m.event_type === '$groupidentify';
    const ops = group ? m.group_properties : m.user_properties;
    // A group's traits are only set.
    const unkept = isPlainObject(ops) ? Object.keys(ops).filter((op) => (group ? op !== '$set' : !KEPT_OPERATIONS.has(op))) : [];
    if (unkept.length > 0) {
      const field = group ? 'group_properties' : 'user_properties';
      refusals.set(i, unkept.map((op) => unsupported(i, `${field}.${op}`, op, group)));
      return {};
    }
    if (group) {
      // The SDK's groupIdentify may name several groups of its type: each is given the traits, the first as the message's own item.
      updatesAt.set(i, 'group');
      const [first, ...rest] = groupsOf(m.groups);
      for (const g of rest) updates.push({ message: i, item: groupItem(m, { timestamp: base.timestamp }, g), operations: { groups: m.groups } });
      return groupItem(m, base, first);
    }
    const operations = isPlainObject(m.user_properties) ? personOperations(m.user_properties) : {};
    if (m.event_type === '$identify') {
      updatesAt.set(i, 'identify');
      for (const g of groupsOf(m.groups)) updates.push({ message: i, item: { type: 'group', distinct_id: base.distinct_id, ...g }, operations: { groups: m.groups } });
      return { type: 'identify', ...base, ...operations };
    }
    // As PostHog's $set on an event: an identify with the event's id and time.
    if (Object.keys(operations).length > 0 && base.distinct_id !== undefined) updates.push({ message: i, item: personUpdateOf(base, operations), operations: { user_properties: m.user_properties } });
    const item: Record<string, unknown> = { event: m.event_type, ...base };
    const props = m.event_properties;
    if (props !== undefined && props !== null) item.properties = props;
    if (isPlainObject(m.groups) && Object.keys(m.groups).length > 0) item.properties = { ...(isPlainObject(props) ? props : {}), $groups: m.groups };
    return item;
  });
  const sentField = (index: number, field: string): string => {
    const kind = updatesAt.get(index);
    if (kind === 'identify') return operationField(field, USER_PROPERTY_FIELDS) ?? field;
    if (kind === 'group') return operationField(field, GROUP_PROPERTY_FIELDS) ?? field;
    return field;
  };
  return { items, ownEvents: new Set(), updates, refusals, operationFields: USER_PROPERTY_FIELDS, sentField };
}

/** Where a person update's fields are in an Amplitude event: its user_properties' operations. */
const USER_PROPERTY_FIELDS: readonly OperationField[] = [['properties', 'user_properties.$set'], ['set_once', 'user_properties.$setOnce'], ['unset', 'user_properties.$unset']];
/** Where a $groupidentify's traits are. */
const GROUP_PROPERTY_FIELDS: readonly OperationField[] = [['properties', 'group_properties.$set']];

function unsupported(index: number, field: string, op: string, group: boolean): ItemError {
  const kept = group ? '$set' : '$set, $setOnce and $unset';
  return { index, code: 'unsupported_operation', field, message: `${op} is not kept by Inlet; send ${kept}. Nothing of this event was stored.` };
}

/** The fields every event maps alike: its ids, time and insert_id. */
function baseOf(m: Record<string, unknown>): Record<string, unknown> {
  const base = identity(idText(m.user_id), idText(m.device_id));
  const insertId = insertIdFor(m.insert_id);
  if (insertId !== undefined) base.insert_id = insertId;
  if (m.time !== undefined && m.time !== null) base.timestamp = m.time;
  return base;
}

/** $set, $setOnce and $unset as an identify's traits, set_once and unset ($unset's values, Amplitude's "-", are not read). */
function personOperations(ops: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (ops.$set !== undefined) out.properties = ops.$set;
  if (ops.$setOnce !== undefined) out.set_once = ops.$setOnce;
  if (ops.$unset !== undefined) out.unset = isPlainObject(ops.$unset) ? Object.keys(ops.$unset) : ops.$unset;
  return out;
}

/** How many groups the $identify and $groupidentify events name, counted before any item is made of them. */
function membershipsOf(events: unknown[]): number {
  let n = 0;
  for (const m of events) {
    if (!isPlainObject(m) || (m.event_type !== '$identify' && m.event_type !== '$groupidentify') || !isPlainObject(m.groups)) continue;
    for (const keys of Object.values(m.groups)) n += Array.isArray(keys) ? keys.length : 1;
  }
  return n;
}

/** Each group type and key of `groups` (a key may be a list of them), as a group item's fields. */
function groupsOf(groups: unknown): { group_type: string; group_key: unknown }[] {
  if (!isPlainObject(groups)) return [];
  return Object.entries(groups).flatMap(([type, keys]) => (Array.isArray(keys) ? keys : [keys]).map((key) => ({ group_type: type, group_key: idText(key) })));
}

/** A $groupidentify's group (one of those it names) as a group item, group_properties.$set its traits. */
function groupItem(m: Record<string, unknown>, base: Record<string, unknown>, group: { group_type: string; group_key: unknown } | undefined): Record<string, unknown> {
  const item: Record<string, unknown> = { type: 'group', group_type: group?.group_type, group_key: group?.group_key };
  if (base.insert_id !== undefined) item.insert_id = base.insert_id;
  if (base.timestamp !== undefined) item.timestamp = base.timestamp;
  if (isPlainObject(m.group_properties) && m.group_properties.$set !== undefined) item.properties = m.group_properties.$set;
  return item;
}

/** Amplitude's bodies as the intake pipeline reads them (pipeline/foreign-body.ts). */
export const AMPLITUDE_WIRE: WireMap = {
  keyOf: apiKeyOf,
  read(json) {
    const events = readAmplitudeBody(json);
    if (isRefusal(events)) return events;
    const memberships = membershipsOf(events);
    if (memberships > MAX_MEMBERSHIPS) {
      return { code: 'batch_too_many_items', message: `The $identify and $groupidentify events name ${memberships} groups in "groups"; at most ${MAX_MEMBERSHIPS} are allowed in one request. Send fewer at a time.` };
    }
    return amplitudeItems(events);
  },
};
