import type { DropReason } from '../errors/codes.js';
import type { CheckedBatch } from './checked-batch.js';
import type { EnrichedItem, ShownItem } from './enriched-item.js';
import type { JsonObject } from './properties.js';

/**
 * A checked batch as it crosses from a check thread to the main thread.
 *
 * Why not the items themselves: copying them between threads re-creates every
 * property object, which cost 1.4 µs an item on the main thread, over half of
 * what checking it there costs (2.4 µs). As text they cost 0.4 µs: each item
 * travels as a tuple of its fields (SENT), its properties as the JSON text the
 * checks wrote, and its properties object is parsed again only if something
 * asks for it (a dry run's answer, an identify's traits).
 */
export interface TransferBatch {
  count: number;
  droppedKeys: string[];
  errors: CheckedBatch['errors'];
  refused: CheckedBatch['refused'];
  items: ItemTuple[];
  dropped: [index: number, reason: DropReason, item: ItemTuple][];
}

/** Every field of every item type (src/domain/ingest/item.ts). */
type ItemField = EnrichedItem extends infer I ? (I extends unknown ? keyof I : never) : never;
type SentField = Exclude<ItemField, 'properties'>;

/**
 * The fields an item crosses with, in tuple order: every field of every item
 * type but `properties`, which crosses as `propertiesJson`. The compiler holds
 * this list to the item's declaration: a field missing here, or one that is
 * not an item's, fails to compile.
 */
const SENT = {
  index: 0, type: 1, event: 2, distinctId: 3, anonymousId: 4, sessionId: 5, insertId: 6, timestamp: 7,
  propertiesJson: 8, storedJson: 9, enrichment: 10, userAgent: 11, droppedKeys: 12,
} as const satisfies Record<SentField, number>;
const SLOTS = Object.keys(SENT) as SentField[];

/** An item's fields as they cross, at their places in SENT (a field an item type does not have is undefined). */
type ItemTuple = unknown[];

export function packBatch(b: CheckedBatch): TransferBatch {
  return {
    count: b.count,
    droppedKeys: b.droppedKeys,
    errors: b.errors,
    refused: b.refused,
    items: b.items.map(pack),
    dropped: b.dropped.map((d) => [d.index, d.reason, pack(d.item)]),
  };
}

export function unpackBatch(t: TransferBatch): CheckedBatch {
  return {
    count: t.count,
    droppedKeys: t.droppedKeys,
    errors: t.errors,
    refused: t.refused,
    items: t.items.map(unpack),
    dropped: t.dropped.map(([index, reason, item]) => ({ index, reason, item: unpack(item) })),
  };
}

/** Runs on the check thread. */
function pack(item: ShownItem): ItemTuple {
  const fields: Partial<Record<SentField, unknown>> = item;
  const t: ItemTuple = new Array(SLOTS.length);
  for (let s = 0; s < SLOTS.length; s++) t[s] = fields[SLOTS[s]!];
  return t;
}

/**
 * Runs on the main thread, in a literal of fixed shape: filling an object in a
 * loop over SLOTS costs a keyed store per field. `satisfies` holds the
 * literal to SENT: every field, and no other.
 */
function unpack(t: ItemTuple): EnrichedItem {
  const item = {
    index: t[SENT.index],
    type: t[SENT.type],
    event: t[SENT.event],
    distinctId: t[SENT.distinctId],
    anonymousId: t[SENT.anonymousId],
    sessionId: t[SENT.sessionId],
    insertId: t[SENT.insertId],
    timestamp: t[SENT.timestamp],
    propertiesJson: t[SENT.propertiesJson],
    storedJson: t[SENT.storedJson],
    enrichment: t[SENT.enrichment],
    userAgent: t[SENT.userAgent],
    droppedKeys: t[SENT.droppedKeys],
    get properties(): JsonObject {
      return parseOnce(this);
    },
  } satisfies Record<ItemField, unknown>;
  // Each field is the one pack read from an item of this type.
  return item as EnrichedItem;
}

/** The properties parsed from their text, kept on the item in place of the getter. */
function parseOnce(item: { propertiesJson: unknown }): JsonObject {
  const value = JSON.parse(item.propertiesJson as string) as JsonObject;
  Object.defineProperty(item, 'properties', { value, enumerable: true, writable: true, configurable: true });
  return value;
}
