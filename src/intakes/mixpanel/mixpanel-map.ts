/**
 * Mixpanel's ingestion API read as Inlet items, so code written for the
 * `mixpanel` SDKs (or Mixpanel's HTTP API) works by changing its host:
 * /track and /import events, /engage people updates, /groups group updates.
 * Anything the mapping does not name is left out; the items then go through
 * the same checks as any.
 */
import type { BearerResult } from '../../domain/keys.js';
import type { ItemError } from '../../domain/items/fields/field-error.js';
import { isPlainObject } from '../../domain/items/fields/text.js';
import type { MappedMessages, WireMap, WireShape } from '../../pipeline/foreign-body.js';
import { type Refusal, isRefusal } from '../../domain/intake/refusal.js';
import { identity, insertIdFor } from '../segment/segment-map.js';

/** Mixpanel's endpoints, by what their messages are. */
export type MixpanelKind = 'track' | 'import' | 'engage' | 'groups';

/** The paths, each with and without its trailing slash, by kind. */
export const MIXPANEL_PATHS: ReadonlyMap<string, MixpanelKind> = new Map(
  (['track', 'import', 'engage', 'groups'] as const).flatMap((k) => [[`/${k}`, k], [`/${k}/`, k]] as const),
);

/** Messages in one request at most: Mixpanel's own bound for /import (its SDKs send 50). */
export const MAX_MESSAGES = 2000;

/**
 * Properties Mixpanel's libraries (node, python, ruby, java, go, php, the
 * browser's) set themselves: what they say of the library, its request or the
 * browser, never of the event. Stripped, as Inlet's own enrichment keys are.
 */
const MIXPANEL_LIBRARY_FIELDS = new Set([
  'token', 'mp_lib', '$lib', '$lib_version', 'mp_sent_by_lib_version', 'mp_api_endpoint', 'mp_api_timestamp_ms', '$mp_api_endpoint',
  '$mp_api_timestamp_ms', '$os', '$browser', '$browser_version', '$device', '$screen_height', '$screen_width', '$referrer', '$referring_domain',
  '$initial_referrer', '$initial_referring_domain', '$search_engine', '$had_persisted_distinct_id', '$mp_replay_id', 'mp_page', 'mp_browser',
  'mp_platform', '$import', '$source',
]);

/** Fields an event's properties carry that the mapping reads into the item's own. */
const EVENT_IDS = new Set(['distinct_id', '$user_id', '$device_id', 'time', '$insert_id']);

/** Mixpanel's reserved people properties, kept as the plain traits they stand for. */
const PEOPLE_NAMES: ReadonlyMap<string, string> = new Map([
  ['$email', 'email'], ['$phone', 'phone'], ['$name', 'name'], ['$first_name', 'first_name'], ['$last_name', 'last_name'],
  ['$avatar', 'avatar'], ['$created', 'created'],
]);

/**
 * What an update may name besides its data: its ids, its time and the
 * libraries' own flags, then the operations Inlet keeps (a person's traits
 * are set, set once and unset, never added to or appended; a group's are
 * set). Any other \$ key is an operation Inlet does not keep ($add, $append,
 * $union, $remove, $delete, or one it does not know): refused, never dropped.
 */
const UPDATE_FIELDS = ['$token', '$time', '$ip', '$ignore_time', '$ignore_alias', '$latitude', '$longitude'];
const KEPT_PEOPLE: ReadonlySet<string> = new Set([...UPDATE_FIELDS, '$distinct_id', '$device_id', '$user_id', '$set', '$set_once', '$unset']);
const KEPT_GROUPS: ReadonlySet<string> = new Set([...UPDATE_FIELDS, '$group_key', '$group_id', '$set']);

const BASE64 = /^[A-Za-z0-9+/\-_]*={0,2}$/;

/**
 * The body's JSON: a JSON body as it is (/import), else the form's (or a
 * GET's query's) `data=`, base64 of JSON, whose `+` may have become spaces
 * when a client did not encode it, or JSON as it is.
 */
export function decodeData(bytes: Uint8Array): Uint8Array | Refusal {
  const first = firstNonSpace(bytes);
  if (first === 0x5b || first === 0x7b) return bytes;
  const data = dataField(Buffer.from(bytes).toString('utf8'));
  if (data === null) {
    return { code: 'invalid_body', message: 'Send the events as data=<base64 of their JSON>, once, in the query (GET) or the form body (POST); /import also takes a JSON array.' };
  }
  let text: string;
  try {
    text = decodeURIComponent(data.replaceAll('+', ' ')).trim();
  } catch {
    return { code: 'invalid_body', message: 'data= is not URL-encoded: a "%" must start an escape such as %2B.' };
  }
  if (text.startsWith('{') || text.startsWith('[')) return Buffer.from(text, 'utf8');
  const b64 = text.replaceAll(' ', '+');
  if (b64 === '' || !BASE64.test(b64)) {
    return { code: 'invalid_body', message: 'data= is not base64: send the JSON of the events base64-encoded (a "+" sent unencoded is read as one).' };
  }
  return Buffer.from(b64, 'base64');
}

/**
 * The one `data` field of a form or query, as sent (still URL-encoded); null
 * when there is none or more than one. Found by searching for it rather than
 * by parsing every field (URLSearchParams): a 1 MiB form of half a million
 * empty fields took 220 ms of the thread that finds the keys of every client's
 * bodies, against 10 to 30 ms for a 1 MiB JSON body.
 */
function dataField(form: string): string | null {
  let found: string | null = null;
  for (let at = form.indexOf('data='); at !== -1; at = form.indexOf('data=', at + 1)) {
    if (at !== 0 && form.charCodeAt(at - 1) !== 0x26) continue;
    if (found !== null) return null;
    const end = form.indexOf('&', at);
    found = form.slice(at + 5, end === -1 ? form.length : end);
    if (end === -1) break;
    at = end;
  }
  return found;
}

function firstNonSpace(bytes: Uint8Array): number | undefined {
  for (const b of bytes) if (b !== 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) return b;
  return undefined;
}

/** The key where Mixpanel's libraries put their project token: `properties.token` of an event, `$token` of a people or group update. */
export function tokenOf(json: unknown): BearerResult {
  const first = Array.isArray(json) ? json[0] : json;
  if (!isPlainObject(first)) return { kind: 'missing' };
  const props = isPlainObject(first.properties) ? first.properties : {};
  for (const v of [props.token, first.$token]) if (typeof v === 'string' && v !== '') return { kind: 'token', token: v };
  return { kind: 'missing' };
}

/** The body's messages: one object, or an array of 1 to MAX_MESSAGES. */
export function readMixpanelBody(json: unknown): unknown[] | Refusal {
  if (isPlainObject(json)) return [json];
  if (!Array.isArray(json)) return { code: 'invalid_body', message: 'The data must be a JSON object (one message) or an array of them.' };
  if (json.length === 0) return { code: 'batch_empty', message: 'The array is empty. Send at least one message.' };
  if (json.length > MAX_MESSAGES) {
    return { code: 'batch_too_many_items', message: `The request has ${json.length} messages; at most ${MAX_MESSAGES} are allowed. Send fewer at a time.` };
  }
  return json;
}

/** Mixpanel's `time` (seconds, or milliseconds since 2001 or so) as epoch milliseconds; other forms are passed on to be refused. */
export function timeOf(time: unknown): unknown {
  if (typeof time !== 'number' || !Number.isFinite(time)) return time;
  return Math.round(time < 1e11 ? time * 1000 : time);
}

/** An id as text: Mixpanel's libraries pass numbers through. */
function idText(v: unknown): unknown {
  return typeof v === 'number' ? String(v) : v;
}

/** Items for the messages, one per message at its index, and the messages refused for an operation Inlet does not keep. */
export function mixpanelItems(messages: unknown[], kind: MixpanelKind): MappedMessages {
  const refusals = new Map<number, ItemError[]>();
  const first = tokenOf(messages);
  const items = messages.map((m, i) => {
    if (!isPlainObject(m)) return m;
    const own = tokenOf(m);
    // The request's key is its first message's token: a message naming another belongs to another project, and would be stored in this one.
    if (first.kind === 'token' && own.kind === 'token' && own.token !== first.token) {
      refusals.set(i, [tokenMismatch(i, kind)]);
      return {};
    }
    if (kind === 'track' || kind === 'import') return eventItem(m);
    const kept = kind === 'engage' ? KEPT_PEOPLE : KEPT_GROUPS;
    const unkept = Object.keys(m).filter((k) => k.startsWith('$') && !kept.has(k));
    if (unkept.length > 0) {
      refusals.set(i, unkept.map((op) => unsupported(i, op, kind)));
      return {};
    }
    return kind === 'engage' ? personItem(m) : groupItem(m);
  });
  return { items, ownEvents: new Set(), updates: [], refusals };
}

function tokenMismatch(index: number, kind: MixpanelKind): ItemError {
  return {
    index, code: 'token_mismatch', field: kind === 'track' || kind === 'import' ? 'properties.token' : '$token',
    message: "This message names another token than the request's first message, whose token is the request's key; send each token's messages in a request of their own. Nothing of this message was stored.",
  };
}

function unsupported(index: number, op: string, kind: MixpanelKind): ItemError {
  const kept = kind === 'engage' ? "$set, $set_once and $unset (a person's traits are set, never added to or appended)" : '$set';
  return { index, code: 'unsupported_operation', field: op, message: `${op} is not kept by Inlet; send ${kept}. Nothing of this update was stored.` };
}

/** A /track or /import event: its ids, time and insert_id read out of its properties, the libraries' own fields left out. */
function eventItem(m: Record<string, unknown>): Record<string, unknown> {
  const props = isPlainObject(m.properties) ? m.properties : {};
  const base: Record<string, unknown> = identity(idText(props.distinct_id ?? props.$user_id), idText(props.$device_id));
  const insertId = insertIdFor(props.$insert_id);
  if (insertId !== undefined) base.insert_id = insertId;
  const timestamp = timeOf(props.time);
  if (timestamp !== undefined && timestamp !== null) base.timestamp = timestamp;
  if (m.event === '$create_alias') return { type: 'alias', ...base, previous_id: idText(props.alias) };
  const item: Record<string, unknown> = { event: m.event, ...base };
  if (m.properties !== undefined && m.properties !== null && !isPlainObject(m.properties)) item.properties = m.properties;
  // Object.fromEntries keeps a "__proto__" key as data instead of setting the prototype.
  else item.properties = Object.fromEntries(Object.entries(props).filter(([k]) => !MIXPANEL_LIBRARY_FIELDS.has(k) && !EVENT_IDS.has(k)));
  return item;
}

/** An /engage update as an identify: $set as its traits, $set_once and $unset as its own. */
function personItem(m: Record<string, unknown>): Record<string, unknown> {
  const item: Record<string, unknown> = { type: 'identify', distinct_id: idText(m.$distinct_id ?? m.$user_id) };
  if (m.$set !== undefined) item.properties = traits(m.$set);
  if (m.$set_once !== undefined) item.set_once = traits(m.$set_once);
  if (m.$unset !== undefined) item.unset = Array.isArray(m.$unset) ? m.$unset.map((k) => (typeof k === 'string' ? (PEOPLE_NAMES.get(k) ?? k) : k)) : m.$unset;
  const timestamp = timeOf(m.$time);
  if (timestamp !== undefined) item.timestamp = timestamp;
  return item;
}

/** A /groups update as a group: $group_key is its type, $group_id its key, $set its traits. */
function groupItem(m: Record<string, unknown>): Record<string, unknown> {
  const item: Record<string, unknown> = { type: 'group', group_type: m.$group_key, group_key: idText(m.$group_id) };
  if (m.$set !== undefined) item.properties = m.$set;
  return item;
}

/** Traits as Mixpanel names them, its reserved people properties ($email, $name, …) as the plain names they stand for. */
function traits(set: unknown): unknown {
  if (!isPlainObject(set)) return set;
  return Object.fromEntries(Object.entries(set).map(([k, v]) => [PEOPLE_NAMES.get(k) ?? k, v]));
}

/** Mixpanel's bodies as the intake pipeline reads them (pipeline/foreign-body.ts). */
export const MIXPANEL_WIRE: WireMap = {
  keyOf: tokenOf,
  decode: decodeData,
  read(json, shape: WireShape) {
    const messages = readMixpanelBody(json);
    return isRefusal(messages) ? messages : mixpanelItems(messages, shape.type as MixpanelKind);
  },
};
