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
 * travels as a tuple of its fields (AT), its properties as the JSON text the
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
 * Where each field of an item sits in the tuple it crosses as: every field of
 * every item type but `properties`, which crosses as `propertiesJson`. The
 * compiler holds the names to the item's declaration (a field missing here,
 * or one no item has, fails to compile); item-transfer.test.ts holds the
 * places to one each, and pack and TransferredItem to every field.
 */
export const AT = {
  index: 0, type: 1, event: 2, distinctId: 3, anonymousId: 4, sessionId: 5, insertId: 6, timestamp: 7,
  propertiesJson: 8, storedJson: 9, enrichment: 10, userAgent: 11, droppedKeys: 12,
  setOnce: 13, unset: 14, groupType: 15, groupKey: 16, previousId: 17,
} as const satisfies Record<SentField, number>;

/** An item's fields as they cross, at their places in AT (undefined for a field its type does not have). */
export type ItemTuple = unknown[];

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

/** Items alone as they cross: the person updates a body's messages carry (foreign-body.ts). */
export function packItems(items: EnrichedItem[]): ItemTuple[] {
  return items.map(pack);
}

/** Items packed by packItems, on the main thread. */
export function unpackItems(t: ItemTuple[]): EnrichedItem[] {
  return t.map(unpack);
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

/**
 * Runs on the check thread. An array literal in AT's order: one made with
 * `new Array(n)` has holes to V8 until filled, and crosses as a sparse array,
 * twice as slow to unpack. Field by field: a loop over AT's names costs a
 * keyed load per field. The transfer test holds this order to AT.
 */
function pack(item: ShownItem): ItemTuple {
  return [
    item.index,
    item.type,
    item.event,
    item.distinctId,
    item.anonymousId,
    item.sessionId,
    item.insertId,
    item.timestamp,
    item.propertiesJson,
    'storedJson' in item ? item.storedJson : undefined,
    item.enrichment,
    item.userAgent,
    item.droppedKeys,
    'setOnce' in item ? item.setOnce : undefined,
    'unset' in item ? item.unset : undefined,
    'groupType' in item ? item.groupType : undefined,
    'groupKey' in item ? item.groupKey : undefined,
    'previousId' in item ? item.previousId : undefined,
  ];
}

/** Runs on the main thread. */
function unpack(t: ItemTuple): EnrichedItem {
  // Each field is the one pack read from an item of this type.
  return new TransferredItem(t) as EnrichedItem;
}

/**
 * An item from a check thread, its properties parsed from their text on first
 * use. A class rather than a literal with a getter: a literal's getter is made
 * anew for each item, about ten times the cost of the whole item. The
 * compiler holds its fields to AT: `implements` asks for every field, and
 * each is read from its place in AT.
 */
class TransferredItem implements Record<ItemField, unknown> {
  readonly index: unknown;
  readonly type: unknown;
  readonly event: unknown;
  readonly distinctId: unknown;
  readonly anonymousId: unknown;
  readonly sessionId: unknown;
  readonly insertId: unknown;
  readonly timestamp: unknown;
  readonly propertiesJson: unknown;
  readonly storedJson: unknown;
  readonly enrichment: unknown;
  readonly userAgent: unknown;
  readonly droppedKeys: unknown;
  readonly setOnce: unknown;
  readonly unset: unknown;
  readonly groupType: unknown;
  readonly groupKey: unknown;
  readonly previousId: unknown;
  #parsed: JsonObject | undefined;

  constructor(t: ItemTuple) {
    this.index = t[AT.index];
    this.type = t[AT.type];
    this.event = t[AT.event];
    this.distinctId = t[AT.distinctId];
    this.anonymousId = t[AT.anonymousId];
    this.sessionId = t[AT.sessionId];
    this.insertId = t[AT.insertId];
    this.timestamp = t[AT.timestamp];
    this.propertiesJson = t[AT.propertiesJson];
    this.storedJson = t[AT.storedJson];
    this.enrichment = t[AT.enrichment];
    this.userAgent = t[AT.userAgent];
    this.droppedKeys = t[AT.droppedKeys];
    this.setOnce = t[AT.setOnce];
    this.unset = t[AT.unset];
    this.groupType = t[AT.groupType];
    this.groupKey = t[AT.groupKey];
    this.previousId = t[AT.previousId];
  }

  get properties(): JsonObject {
    return (this.#parsed ??= JSON.parse(this.propertiesJson as string) as JsonObject);
  }
}
