/**
 * Bodies in another API's shape (Segment's, PostHog's), from their bytes to
 * checked items: where their key is in the body, their messages as items, and
 * each message answered once, at its own index, whatever it became. What is
 * the intake's own (where its key is, how a message reads as an item) comes
 * in as its WireMap (src/intakes/<name>/); the rest is the same for every
 * intake. Takes only data, so that a check thread can run it
 * (intakes/check-thread.ts): a body whose key is inside it is never parsed on
 * the main thread.
 */
import type { BearerResult } from '../domain/keys.js';
import { checkItems } from './check-batch.js';
import { type Admit, type BatchContext, type CheckContext, type CheckedBatch, readyContext, refusedItems, withPlan } from './checked-batch.js';
import type { EnrichedItem } from '../domain/items/enriched-item.js';
import type { ItemError } from '../domain/items/fields/field-error.js';
import { gunzipSync } from 'node:zlib';
import { BROKEN_GZIP, MAX_BODY_BYTES, bodyTooLarge, parseJsonBody } from './parse-body.js';
import { type Refusal, isRefusal } from '../domain/intake/refusal.js';
import { isPlainObject } from '../domain/items/fields/text.js';

/**
 * Which intake's shape a body is in, by the intake's name (it crosses to a
 * check thread, which finds the intake's WireMap by it), and the message type
 * its path names, for an intake whose paths name one (Segment's /v1/track).
 */
export interface WireShape {
  intake: string;
  type?: string | null;
}

/** What an intake says of bodies in its shape: where its SDKs put the key, and its messages as items. */
export interface WireMap {
  /** The key where the intake's SDKs put it in the body. */
  keyOf(json: unknown): BearerResult;
  /** The parsed body shaped and mapped: its messages as items (one per message, at its index), or its refusal. */
  read(json: unknown, shape: WireShape, arrival: number): MappedMessages | Refusal;
  /** A body that is not JSON as sent (Mixpanel's form or query `data=<base64>`) as its JSON's bytes; absent: the body is JSON. */
  decode?(bytes: Uint8Array): Uint8Array | Refusal;
  /**
   * The intake whose body this is when it is in another's shape at a path
   * both name (Amplitude's batch API at PostHog's /batch): found with its key,
   * and taken by that intake if that intake names the path too.
   */
  otherIntake?(json: unknown): string | undefined;
}

/** An event's person operations as the identify they make, answered with the message that carried them. */
export interface PersonUpdate {
  /** The message's index. */
  message: number;
  /** The identify item. */
  item: Record<string, unknown>;
  /** $set, $set_once and $unset as sent: a message refused for them is sampled with them. */
  operations: Record<string, unknown>;
}

/** A body's messages as items: one per message, at its index. */
export interface MappedMessages {
  items: unknown[];
  /** Indices of items whose event name the intake set itself ($pageview). */
  ownEvents: Set<number>;
  /** Person updates some messages carry besides their item (PostHog's $set on an event). */
  updates: PersonUpdate[];
  /** Messages the map refuses itself, by index (an operation Inlet does not keep): answered with these errors, never checked. */
  refusals?: ReadonlyMap<number, ItemError[]>;
  /** Where an update's identify fields came from in its message, when not PostHog's `properties.$set` and the like (OPERATION_FIELDS). */
  operationFields?: readonly OperationField[];
  /** An error's field as the message at `index` sent it, when its item's field is named otherwise there (an Amplitude $identify's traits are its user_properties.$set). */
  sentField?(index: number, field: string): string;
}

/** An identify's field, and where it came from in a message. */
export type OperationField = readonly [identify: string, message: string];

/** The messages checked: one verdict per message, and the person updates of the messages kept, to be written with them. */
export interface CheckedMessages {
  batch: CheckedBatch;
  /** Valid identify items, each with its message's index. */
  updates: EnrichedItem[];
}

/** A body's key, and its JSON (decompressed, when it came as gzip) for the checks once the key is known. */
export interface KeyFound {
  key: BearerResult;
  json: Uint8Array;
  /** The intake whose shape the body is in, when not the one whose path it came to (WireMap.otherIntake). */
  intake?: string;
}

/**
 * Decompresses and parses a body to find its key: a check thread's work for a
 * body whose key is not in a header. A body that is not JSON has no key to
 * find, and is answered missing_key (the key's check comes first); a gzip
 * stream that is broken or too large is refused as readBody refuses it.
 */
export function findKey(bytes: Uint8Array, gzip: boolean, wire: WireMap): KeyFound | Refusal {
  const inflated = gzip ? inflateLimited(bytes) : bytes;
  if (isRefusal(inflated)) return inflated;
  const json = wire.decode === undefined ? inflated : wire.decode(inflated);
  // A body that cannot be decoded has no key to find either.
  if (isRefusal(json)) return { key: { kind: 'missing' }, json: inflated };
  const parsed = parseJsonBody(json);
  if (isRefusal(parsed)) return { key: { kind: 'missing' }, json };
  const other = wire.otherIntake?.(parsed.json);
  return other === undefined ? { key: wire.keyOf(parsed.json), json } : { key: wire.keyOf(parsed.json), json, intake: other };
}

/**
 * A gzip body decompressed here, on this thread (a check thread: the main
 * thread decompresses on libuv's pool instead, read-body.ts); it stops as
 * soon as the output passes MAX_BODY_BYTES, so a gzip bomb costs about 1 MiB.
 */
function inflateLimited(bytes: Uint8Array): Buffer | Refusal {
  try {
    return gunzipSync(bytes, { maxOutputLength: MAX_BODY_BYTES });
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' ? bodyTooLarge('once decompressed') : BROKEN_GZIP;
  }
}

/** The body parsed, shaped and mapped: its messages as items, or its refusal. */
export function readMessages(bytes: Uint8Array, wire: WireMap, shape: WireShape, arrival: number): MappedMessages | Refusal {
  const json = wire.decode === undefined ? bytes : wire.decode(bytes);
  if (isRefusal(json)) return json;
  const parsed = parseJsonBody(json);
  return isRefusal(parsed) ? parsed : wire.read(parsed.json, shape, arrival);
}

/** A body's checks from parsing on, on this thread: read, admitted by the limits (one item a message), each message checked. */
export async function checkForeignBody(bytes: Uint8Array, wire: WireMap, shape: WireShape, ctx: BatchContext, admit: Admit): Promise<CheckedMessages | Refusal> {
  const mapped = readMessages(bytes, wire, shape, ctx.now);
  if (isRefusal(mapped)) return mapped;
  const refused = await admit(mapped.items.length);
  if (refused !== null) return refused;
  const ready = readyContext(ctx);
  return checkMessages(mapped, ready instanceof Promise ? await ready : ready);
}

/** Where an identify's fields came from in the message: its person operations. */
const OPERATION_FIELDS: readonly OperationField[] = [
  ['properties', 'properties.$set'],
  ['set_once', 'properties.$set_once'],
  ['unset', 'properties.$unset'],
];

/** An identify's error field as the message's field, or null when it is not one of the person operations'. */
export function operationField(field: string, fields: readonly OperationField[] = OPERATION_FIELDS): string | null {
  for (const [own, sent] of fields) {
    if (field === own || field.startsWith(`${own}.`)) return sent + field.slice(own.length);
  }
  return null;
}

/**
 * Each message checked with its person update, if it has one, and answered
 * once at its own index, as one item: a message is refused when its event or
 * its person operations are invalid (nothing of it is kept, as an item with one
 * bad property is refused whole), the errors of its operations named by the
 * fields it sent them in (`properties.$set.<key>`); a message dropped (the bot
 * filter) drops its update too; a kept message's update is written with it.
 */
export function checkMessages(mapped: MappedMessages, ctx: CheckContext): CheckedMessages {
  const checked = checkMapped(mapped, ctx);
  if (mapped.refusals === undefined || mapped.refusals.size === 0) return checked;
  return withMapRefusals(checked, mapped.refusals, mapped.items);
}

/**
 * The messages the map refused itself answered with its errors, in place of
 * their checks' verdicts (the map gave them items only to keep the indices).
 */
function withMapRefusals(checked: CheckedMessages, refusals: ReadonlyMap<number, ItemError[]>, raws: unknown[]): CheckedMessages {
  const { batch } = checked;
  const errors = [...batch.errors.filter((e) => !refusals.has(e.index)), ...[...refusals.values()].flat()].sort((a, b) => a.index - b.index);
  return {
    batch: {
      ...batch,
      errors,
      items: batch.items.filter((i) => !refusals.has(i.index)),
      dropped: batch.dropped.filter((d) => !refusals.has(d.index)),
      refused: refusedItems(errors, raws),
    },
    updates: checked.updates.filter((u) => !refusals.has(u.index)),
  };
}

function checkMapped(mapped: MappedMessages, ctx: CheckContext): CheckedMessages {
  const n = mapped.items.length;
  const all = mapped.updates.length === 0 ? mapped.items : [...mapped.items, ...mapped.updates.map((u) => u.item)];
  const checked = checkItems(all, { ...ctx, ownEvents: mapped.ownEvents });
  const errorsAt = new Map<number, ItemError[]>();
  for (const e of checked.errors) {
    const list = errorsAt.get(e.index);
    if (list === undefined) errorsAt.set(e.index, [e]);
    else list.push(e);
  }
  const updateAt = new Map(checked.items.filter((i) => i.index >= n).map((i) => [i.index, i]));
  // Taken before the updates are given their messages' indices.
  const events = mapped.updates.length === 0 ? checked.items : checked.items.filter((i) => i.index < n);
  const dropped = new Set(checked.dropped.map((d) => d.index));
  const refusedForUpdate = new Set<number>();
  const raws = mapped.updates.length === 0 ? mapped.items : mapped.items.slice();
  const updates: EnrichedItem[] = [];
  const moved: ItemError[] = [];
  // A message one of whose updates is refused is refused whole: none of its other updates (an $identify's groups) is written either.
  const badUpdate = new Set(mapped.updates.filter((_, k) => errorsAt.has(n + k)).map((u) => u.message));
  mapped.updates.forEach((u, k) => {
    const eventRefused = errorsAt.has(u.message);
    const own = errorsAt.get(n + k);
    if (own !== undefined) {
      for (const e of own) {
        const field = operationField(e.field, mapped.operationFields);
        // Its other fields are the event's, already answered for when the event was refused.
        if (field !== null || !eventRefused) moved.push({ ...e, index: u.message, field: field ?? e.field });
      }
      if (!eventRefused) {
        refusedForUpdate.add(u.message);
        raws[u.message] = withOperations(raws[u.message], u.operations);
      }
      return;
    }
    const update = updateAt.get(n + k);
    if (update === undefined || eventRefused || dropped.has(u.message) || badUpdate.has(u.message)) return;
    update.index = u.message;
    updates.push(update);
  });
  const own = (index: number) => index < n && !refusedForUpdate.has(index);
  // Sorted by index only (a stable sort): each message's own errors stay before those of its operations.
  const ordered = mapped.updates.length === 0 ? checked.errors : [...checked.errors.filter((e) => e.index < n), ...moved].sort((a, b) => a.index - b.index);
  const sent = mapped.sentField;
  const errors = sent === undefined ? ordered : ordered.map((e) => ({ ...e, field: sent(e.index, e.field) }));
  const batch: CheckedBatch = {
    count: n,
    droppedKeys: [],
    errors,
    items: refusedForUpdate.size === 0 ? events : events.filter((i) => own(i.index)),
    dropped: checked.dropped.filter((d) => own(d.index)),
    refused: refusedItems(errors, raws),
  };
  return { batch: withPlan(batch, ctx, mapped.items), updates };
}

/** An event's item as mapped, its person operations put back in its properties: what its errors' fields name. */
function withOperations(raw: unknown, operations: Record<string, unknown>): unknown {
  if (!isPlainObject(raw)) return raw;
  const props = isPlainObject(raw.properties) ? raw.properties : {};
  return { ...raw, properties: { ...props, ...operations } };
}
