/**
 * Segment's tracking-API messages read as Inlet items, so code written for
 * Segment or RudderStack works by changing its host. Anything the mapping does
 * not name is left out; the items then go through the same checks as any.
 */
import { createHash } from 'node:crypto';
import type { BearerResult } from '../../domain/keys.js';
import { INSERT_ID } from '../../domain/items/fields/ids.js';
import { isPlainObject } from '../../domain/items/fields/text.js';
import { type Refusal, isRefusal } from '../../domain/intake/refusal.js';
import type { WireMap } from '../../pipeline/foreign-body.js';

/** The Segment message types, by their endpoint. */
export const SEGMENT_PATHS = new Map([
  ['/v1/batch', null],
  ['/v1/track', 'track'],
  ['/v1/identify', 'identify'],
  ['/v1/page', 'page'],
  ['/v1/screen', 'screen'],
  ['/v1/group', 'group'],
  ['/v1/alias', 'alias'],
] as const);

export type SegmentPath = Parameters<(typeof SEGMENT_PATHS)['get']>[0];

/** Event names Inlet gives the message types that are not events of their own. */
const OWN_EVENTS = new Map([
  ['page', '$pageview'],
  ['screen', '$screen'],
]);

const MAX_MESSAGES = 500;

/** The messages of a body. */
export interface SegmentBody {
  messages: unknown[];
  /** The batch's own sentAt, for messages without one. */
  sentAt: unknown;
}

/** The body and count checks in Segment's shape: `{batch: [...]}` on /v1/batch, one message elsewhere. */
export function readSegmentBody(json: unknown, type: string | null): SegmentBody | Refusal {
  if (!isPlainObject(json)) {
    return { code: 'invalid_body', message: 'The body must be a JSON object: a message, or {"batch": [...]} on /v1/batch.' };
  }
  if (type !== null) return { messages: [{ ...json, type }], sentAt: json.sentAt };
  if (!Array.isArray(json.batch)) {
    return { code: 'invalid_body', message: 'The body of /v1/batch must be a JSON object with a "batch" array of messages.' };
  }
  if (json.batch.length === 0) return { code: 'batch_empty', message: 'The "batch" array is empty. Send at least one message.' };
  if (json.batch.length > MAX_MESSAGES) {
    return { code: 'batch_too_many_items', message: `The batch has ${json.batch.length} messages; at most ${MAX_MESSAGES} are allowed. Send fewer at a time (flushAt).` };
  }
  return { messages: json.batch, sentAt: json.sentAt };
}

/** The key older SDKs send as "writeKey" in the body. */
export function writeKeyOf(json: unknown): BearerResult {
  if (isPlainObject(json) && typeof json.writeKey === 'string' && json.writeKey !== '') return { kind: 'token', token: json.writeKey };
  return { kind: 'missing' };
}

/** Items for the messages, and which of them got an event name from Inlet itself. */
export function segmentItems(body: SegmentBody, receivedAt: number): { items: unknown[]; ownEvents: Set<number> } {
  const ownEvents = new Set<number>();
  const items = body.messages.map((m, i) => {
    if (!isPlainObject(m)) return m;
    if (typeof m.type === 'string' && OWN_EVENTS.has(m.type)) ownEvents.add(i);
    return segmentItem(m, body.sentAt, receivedAt);
  });
  return { items, ownEvents };
}

/** One message as an item. */
export function segmentItem(m: Record<string, unknown>, batchSentAt: unknown, receivedAt: number): Record<string, unknown> {
  const type = m.type;
  const item: Record<string, unknown> = {};
  if (type === 'identify') item.type = 'identify';
  else if (type === 'track' || type === undefined || type === null) item.event = m.event;
  else if (typeof type === 'string' && OWN_EVENTS.has(type)) item.event = OWN_EVENTS.get(type);
  else if (type === 'group') Object.assign(item, groupOf(m));
  else if (type === 'alias') Object.assign(item, { type, previous_id: m.previousId });
  // Unknown types keep their type, and are refused with its code.
  else item.type = type;
  Object.assign(item, identity(m.userId, m.anonymousId));
  const insertId = insertIdFor(m.messageId);
  if (insertId !== undefined) item.insert_id = insertId;
  // RudderStack's SDK sends the event time as originalTimestamp.
  const timestamp = correctedTimestamp(m.timestamp ?? m.originalTimestamp, m.sentAt ?? batchSentAt, receivedAt);
  if (timestamp !== undefined) item.timestamp = timestamp;
  if (type === 'alias') return item;
  // The rule version a tracking plan holds the message to, as the batch API reads it (the rest of context goes to properties).
  if (isPlainObject(m.context) && m.context.plan_version !== undefined) item.context = { plan_version: m.context.plan_version };
  // A group's traits are its properties already; an alias has none, and neither says anything of the sender.
  if (type === 'group') return item;
  const props = properties(m, type);
  if (props !== undefined) item.properties = props;
  return item;
}

/** A group call: groupId is the group's key, its type the traits' group_type or "company"; the other traits are the group's. */
function groupOf(m: Record<string, unknown>): Record<string, unknown> {
  const item: Record<string, unknown> = { type: 'group', group_key: typeof m.groupId === 'number' ? String(m.groupId) : m.groupId };
  const traits = m.traits;
  if (!isPlainObject(traits)) {
    item.group_type = DEFAULT_GROUP_TYPE;
    if (traits !== undefined && traits !== null) item.properties = traits;
    return item;
  }
  const { group_type: groupType, ...rest } = traits;
  item.group_type = groupType ?? DEFAULT_GROUP_TYPE;
  item.properties = rest;
  return item;
}

/** The group type of a Segment group call that names none: Segment's groups are accounts. */
const DEFAULT_GROUP_TYPE = 'company';

/** userId is the distinct_id; anonymousId is a browser person key when it has that form, else the distinct_id of a message without userId. */
export function identity(userId: unknown, anonymousId: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const user = typeof userId === 'number' ? String(userId) : userId;
  if (user !== undefined && user !== null && user !== '') out.distinct_id = user;
  if (anonymousId === undefined || anonymousId === null || anonymousId === '') return out;
  if (typeof anonymousId === 'string' && anonymousId.startsWith('per_')) out.anonymous_id = anonymousId;
  else if (out.distinct_id === undefined) out.distinct_id = anonymousId;
  // Not an item field: the item checks list it among the keys not kept.
  else out.anonymousId = anonymousId;
  return out;
}

/** messageId as insert_id; one that breaks the insert_id rule becomes a stable hash of it, so retries still deduplicate. */
export function insertIdFor(messageId: unknown): string | undefined {
  if (messageId === undefined || messageId === null || messageId === '') return undefined;
  if (typeof messageId === 'string' && INSERT_ID.test(messageId)) return messageId;
  const text = typeof messageId === 'string' ? messageId : JSON.stringify(messageId);
  return `msg_${createHash('sha256').update(text).digest('hex')}`;
}

const ISO_WITH_OFFSET = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})$/i;

/**
 * The timestamp moved by the sender's clock skew, receivedAt − sentAt: a
 * client whose clock runs fast or slow still gets its events at the right
 * time. A timestamp of another form is passed on for the item checks to refuse.
 */
export function correctedTimestamp(timestamp: unknown, sentAt: unknown, receivedAt: number): unknown {
  if (timestamp === undefined || timestamp === null) return undefined;
  if (typeof timestamp !== 'string' || !ISO_WITH_OFFSET.test(timestamp)) return timestamp;
  const sent = typeof sentAt === 'string' && ISO_WITH_OFFSET.test(sentAt) ? Date.parse(sentAt) : Number.NaN;
  const at = Date.parse(timestamp);
  if (Number.isNaN(sent) || Number.isNaN(at)) return timestamp;
  return new Date(at + (receivedAt - sent)).toISOString();
}

/** properties (or traits for identify), with what context says about the sender. */
function properties(m: Record<string, unknown>, type: unknown): unknown {
  const own = type === 'identify' ? m.traits : m.properties;
  if (own !== undefined && own !== null && !isPlainObject(own)) return own;
  const out: Record<string, unknown> = { ...(own ?? {}) };
  if (type === 'page' || type === 'screen') {
    if (typeof m.name === 'string' && !Object.hasOwn(out, 'name')) out.name = m.name;
  }
  const ctx = isPlainObject(m.context) ? m.context : {};
  const page = isPlainObject(ctx.page) ? ctx.page : {};
  setIfAbsent(out, '$ip', ctx.ip);
  setIfAbsent(out, '$user_agent', ctx.userAgent);
  setIfAbsent(out, '$current_url', page.url);
  return Object.keys(out).length === 0 && own === undefined ? undefined : out;
}

function setIfAbsent(o: Record<string, unknown>, key: string, value: unknown): void {
  if (value !== undefined && value !== null && !Object.hasOwn(o, key)) o[key] = value;
}

/** Segment's bodies as the intake pipeline reads them (pipeline/foreign-body.ts): its messages, and no person updates besides. */
export const SEGMENT_WIRE: WireMap = {
  keyOf: writeKeyOf,
  read(json, shape, arrival) {
    const body = readSegmentBody(json, shape.type ?? null);
    return isRefusal(body) ? body : { ...segmentItems(body, arrival), updates: [] };
  },
};
