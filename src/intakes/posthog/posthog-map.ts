/**
 * PostHog's capture messages read as Inlet items, so code written for
 * posthog-node (or PostHog's HTTP capture API) works by changing its host.
 * Anything the mapping does not name is left out; the items then go through
 * the same checks as any.
 */
import type { BearerResult } from '../../domain/keys.js';
import { isPlainObject } from '../../domain/items/fields/text.js';
import { type Refusal, isRefusal } from '../../domain/intake/refusal.js';
import type { MappedMessages, PersonUpdate, WireMap } from '../../pipeline/foreign-body.js';
import { correctedTimestamp, insertIdFor } from '../segment/segment-map.js';

/** The PostHog capture endpoints, each with and without its trailing slash. */
export const POSTHOG_PATHS: ReadonlySet<string> = new Set(['/batch', '/capture', '/e', '/i/v0/e'].flatMap((p) => [p, `${p}/`]));

const MAX_MESSAGES = 500;

/**
 * Properties PostHog's libraries set themselves (posthog-node, the Python,
 * Go, Ruby, Java and PHP libraries, and the browser's): what they say of the
 * library, its runtime and machine, and of PostHog's own features, never of
 * the event. Stripped, as Inlet's own enrichment keys are.
 */
const POSTHOG_ENRICHMENT = new Set([
  '$lib', '$lib_version', '$lib_version__major', '$lib_version__minor', '$lib_version__patch', '$lib_consumer',
  '$geoip_disable', '$is_server', '$process_person_profile', '$active_feature_flags', '$sent_at', '$is_identified', '$ignore_sent_at',
  '$device_id', '$anon_distinct_id', '$session_id', '$window_id', '$configured_session_timeout_ms', '$context_tags', '$cookieless_mode',
  '$os', '$os_version', '$os_distro', '$python_runtime', '$python_version', '$go_version',
]);
/** A version 4 UUID, as the Python library makes one up for a group_identify() without a distinct_id. */
const RANDOM_UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** Properties that act on the person rather than describe the event. */
const PERSON_OPERATIONS = ['$set', '$set_once', '$unset'] as const;

/** The messages of a body. */
export interface PostHogBody {
  messages: unknown[];
  /** The batch's sent_at, for the clock skew. */
  sentAt: unknown;
}

/** The body and count checks in PostHog's shapes: {"batch": [...]}, an array of events, or one event. */
export function readPostHogBody(json: unknown): PostHogBody | Refusal {
  if (Array.isArray(json)) return countChecked(json, undefined);
  if (!isPlainObject(json)) {
    return { code: 'invalid_body', message: 'The body must be a JSON object: an event, or {"api_key": "<key>", "batch": [...]}.' };
  }
  if (json.batch !== undefined) {
    if (!Array.isArray(json.batch)) return { code: 'invalid_body', message: '"batch" must be an array of events.' };
    return countChecked(json.batch, json.sent_at);
  }
  if (json.event === undefined) {
    return { code: 'invalid_body', message: 'The body must be an event (with "event") or {"api_key": "<key>", "batch": [...]}.' };
  }
  return { messages: [json], sentAt: json.sent_at };
}

function countChecked(messages: unknown[], sentAt: unknown): PostHogBody | Refusal {
  if (messages.length === 0) return { code: 'batch_empty', message: 'The batch is empty. Send at least one event.' };
  if (messages.length > MAX_MESSAGES) {
    return { code: 'batch_too_many_items', message: `The batch has ${messages.length} events; at most ${MAX_MESSAGES} are allowed. Send fewer at a time (flushAt).` };
  }
  return { messages, sentAt };
}

/** The key as PostHog's libraries put it in the body: "api_key", or "token". */
export function apiKeyOf(json: unknown): BearerResult {
  if (!isPlainObject(json)) return { kind: 'missing' };
  for (const name of ['api_key', 'token']) {
    const v = json[name];
    if (typeof v === 'string' && v !== '') return { kind: 'token', token: v };
  }
  return { kind: 'missing' };
}

/**
 * Items for the messages, one per message at its index, which of them got an
 * event name from Inlet itself, and the person updates of those that carry
 * $set, $set_once or $unset on an event: each an identify with the event's id
 * and timestamp, answered and counted with its message (foreign-body.ts).
 */
export function postHogItems(body: PostHogBody, receivedAt: number): MappedMessages {
  const ownEvents = new Set<number>();
  const updates: PersonUpdate[] = [];
  const items = body.messages.map((m, i) => {
    if (!isPlainObject(m)) return m;
    const mapped = postHogItem(m, body.sentAt, receivedAt);
    if (mapped.ownEvent) ownEvents.add(i);
    if (mapped.personUpdate !== null) updates.push({ message: i, item: mapped.personUpdate, operations: personOperationsOf(m) });
    return mapped.item;
  });
  return { items, ownEvents, updates };
}

/** $set, $set_once and $unset of a message as it sent them, for the sample of a message refused for them. */
function personOperationsOf(m: Record<string, unknown>): Record<string, unknown> {
  const ops = operationsSent(m, isPlainObject(m.properties) ? m.properties : {});
  const out: Record<string, unknown> = {};
  for (const op of PERSON_OPERATIONS) if (ops[op] !== undefined && ops[op] !== null) out[op] = ops[op];
  return out;
}

/**
 * $set, $set_once and $unset wherever the libraries put them: in properties
 * (posthog-node), or at the top level of the message (the Python library's
 * set() and set_once()); both read, properties' keys over the top level's.
 */
function operationsSent(m: Record<string, unknown>, props: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const op of PERSON_OPERATIONS) {
    const top = m[op];
    const inProps = props[op];
    if (isPlainObject(top) && isPlainObject(inProps)) out[op] = { ...top, ...inProps };
    else if (inProps !== undefined && inProps !== null) out[op] = inProps;
    else if (top !== undefined && top !== null) out[op] = top;
  }
  return out;
}

/** One message as an item, and the identify its person operations make, if any. */
export function postHogItem(
  m: Record<string, unknown>,
  batchSentAt: unknown,
  receivedAt: number,
): { item: Record<string, unknown>; ownEvent: boolean; personUpdate: Record<string, unknown> | null } {
  const props = isPlainObject(m.properties) ? m.properties : {};
  const base: Record<string, unknown> = {};
  const distinctId = typeof m.distinct_id === 'number' ? String(m.distinct_id) : m.distinct_id;
  if (distinctId !== undefined && distinctId !== null && distinctId !== '') base.distinct_id = distinctId;
  const insertId = insertIdFor(m.uuid);
  if (insertId !== undefined) base.insert_id = insertId;
  const timestamp = correctedTimestamp(m.timestamp, m.sent_at ?? batchSentAt, receivedAt);
  if (timestamp !== undefined) base.timestamp = timestamp;

  const ops = operationsSent(m, props);
  switch (m.event) {
    case '$identify':
    case '$set':
    case '$set_once':
      // identify, and setPersonProperties (posthog-node) or set() and set_once() (Python): person operations and nothing else.
      return { item: { type: 'identify', ...base, ...personOperations(ops) }, ownEvent: false, personUpdate: null };
    case '$create_alias':
      return { item: { type: 'alias', ...base, previous_id: props.alias }, ownEvent: false, personUpdate: null };
    case '$groupidentify': {
      const item: Record<string, unknown> = { type: 'group', ...base, group_type: props.$group_type, group_key: props.$group_key };
      if (props.$group_set !== undefined) item.properties = props.$group_set;
      // Without a distinctId, posthog-node sends "$<type>_<key>": no one joins the group.
      if (item.distinct_id === `$${String(props.$group_type)}_${String(props.$group_key)}`) delete item.distinct_id;
      // The Python library sends a random UUID instead: no one joins the group either.
      if (props.$lib === 'posthog-python' && typeof item.distinct_id === 'string' && RANDOM_UUID.test(item.distinct_id)) delete item.distinct_id;
      return { item, ownEvent: false, personUpdate: null };
    }
    default: {
      const item: Record<string, unknown> = { event: m.event, ...base };
      if (m.properties !== undefined && m.properties !== null && !isPlainObject(m.properties)) item.properties = m.properties;
      else if (isPlainObject(m.properties)) item.properties = eventProperties(props);
      const operations = personOperations(ops);
      const personUpdate = Object.keys(operations).length > 0 && base.distinct_id !== undefined ? personUpdateOf(base, operations) : null;
      return { item, ownEvent: m.event === '$pageview', personUpdate };
    }
  }
}

/** $set, $set_once and $unset as an identify's traits, set_once and unset. */
function personOperations(props: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (props.$set !== undefined && props.$set !== null) out.properties = props.$set;
  if (props.$set_once !== undefined && props.$set_once !== null) out.set_once = props.$set_once;
  if (props.$unset !== undefined && props.$unset !== null) out.unset = props.$unset;
  return out;
}

/** The identify an event's person operations make: the event's id and time, its own insert_id so that a resend repeats it once. */
export function personUpdateOf(base: Record<string, unknown>, ops: Record<string, unknown>): Record<string, unknown> {
  const update: Record<string, unknown> = { type: 'identify', distinct_id: base.distinct_id, ...ops };
  if (base.timestamp !== undefined) update.timestamp = base.timestamp;
  if (typeof base.insert_id === 'string') update.insert_id = insertIdFor(`${base.insert_id}:person`);
  return update;
}

/** An event's properties without PostHog's enrichment and the person operations. */
function eventProperties(props: Record<string, unknown>): Record<string, unknown> {
  // Object.fromEntries keeps a "__proto__" key as data instead of setting the prototype.
  return Object.fromEntries(
    Object.entries(props).filter(([k]) => !POSTHOG_ENRICHMENT.has(k) && !k.startsWith('$feature/') && !(PERSON_OPERATIONS as readonly string[]).includes(k)),
  );
}

/** PostHog's bodies as the intake pipeline reads them (pipeline/foreign-body.ts): its messages, and the person updates they carry. */
export const POSTHOG_WIRE: WireMap = {
  keyOf: apiKeyOf,
  read(json, _shape, arrival) {
    const body = readPostHogBody(json);
    return isRefusal(body) ? body : postHogItems(body, arrival);
  },
};
