import type { DropReason } from '../errors/codes.js';
import type { CheckedBatch } from './checked-batch.js';
import { type ItemType, ITEM_TYPES, KINDS } from '../domain/ingest/item.js';
import { COMMON_FIELDS } from '../domain/items/kind.js';
import type { ITEM_KINDS } from '../domain/items/registry.js';
import { CHECK_NOTES, type EnrichedItem, type ShownItem } from '../domain/items/enriched-item.js';

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
  planFaults: CheckedBatch['planFaults'];
}

/** Every field of every item type (src/domain/items). */
type ItemField = EnrichedItem extends infer I ? (I extends unknown ? keyof I : never) : never;
type SentField = Exclude<ItemField, 'properties'>;

/** The fields the registry lists: the common ones, the checks' notes, and each type's own. */
type Listed = (typeof COMMON_FIELDS)[number] | (typeof CHECK_NOTES)[number] | { [T in ItemType]: keyof (typeof ITEM_KINDS)[T]['own'] }[ItemType];
// The compiler holds the list below to the items' declarations: a field of an item the registry does not list fails here.
const everyFieldListed: [Exclude<ItemField, Listed>] extends [never] ? true : never = true;
void everyFieldListed;

/**
 * The fields an item crosses as, in a fixed order, each once: every field of
 * every item type but `properties`, which crosses as `propertiesJson`. The
 * common fields and the checks' notes first, then each type's own fields in
 * the registry's order (src/domain/items/registry.ts).
 */
const SENT = [...new Set<string>([...COMMON_FIELDS, ...CHECK_NOTES, ...ITEM_TYPES.flatMap((t) => Object.keys(KINDS[t].own))])].filter(
  (f) => f !== 'properties',
) as SentField[];

/** Where each field of an item sits in the tuple it crosses as (item-transfer.test.ts holds the places to one each). */
export const AT = Object.fromEntries(SENT.map((f, i) => [f, i])) as Record<SentField, number>;

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
    planFaults: b.planFaults,
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
    ...(t.planFaults === undefined ? {} : { planFaults: t.planFaults }),
  };
}

/*
 * pack and TransferredItem are written out from SENT when this module loads,
 * as code, so that each reads and writes its fields by name:
 *
 * - pack is an array literal in SENT's order: one made with `new Array(n)`
 *   has holes to V8 until filled, and crosses as a sparse array, twice as
 *   slow to unpack; a loop over the names costs a keyed load per field.
 * - TransferredItem is a class rather than a literal with a getter: a
 *   literal's getter is made anew for each item, about ten times the cost of
 *   the whole item. Its properties are parsed from their text on first use.
 *
 * The code is made of the field names alone, which are identifiers this
 * module's source declares (checked below); nothing an item holds goes into it.
 */
for (const f of SENT) if (!/^[A-Za-z][A-Za-z0-9]*$/.test(f)) throw new Error(`An item field is not a plain name: ${f}`);

/** Runs on the check thread: a field its type does not have crosses as undefined. */
const pack = new Function('item', `return [${SENT.map((f) => `item.${f}`).join(', ')}];`) as (item: ShownItem) => ItemTuple;

/** An item from a check thread, on the main thread: each field the one pack read from an item of its type. */
const TransferredItem = new Function(`return class TransferredItem {
  #parsed;
  constructor(t) { ${SENT.map((f, i) => `this.${f} = t[${i}];`).join(' ')} }
  get properties() { return (this.#parsed ??= JSON.parse(this.propertiesJson)); }
};`)() as new (t: ItemTuple) => EnrichedItem;

function unpack(t: ItemTuple): EnrichedItem {
  return new TransferredItem(t);
}
