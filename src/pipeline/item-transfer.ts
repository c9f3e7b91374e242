import type { DropReason } from '../errors/codes.js';
import type { CheckedBatch } from './checked-batch.js';
import type { EnrichedItem } from './enrich-items.js';
import type { JsonObject } from './properties.js';

/**
 * A checked batch as it crosses from a check thread to the main thread.
 *
 * Why not the items themselves: copying them between threads re-creates every
 * property object, which cost 1.4 µs an item on the main thread, over half of
 * what checking it there costs (2.4 µs). As text they cost 0.4 µs: each item
 * travels as a tuple whose properties are the JSON text the checks wrote, and
 * its properties object is parsed again only if something asks for it (a dry
 * run's answer, an identify's traits).
 */
export interface TransferBatch {
  count: number;
  droppedKeys: string[];
  errors: CheckedBatch['errors'];
  refused: CheckedBatch['refused'];
  items: ItemTuple[];
  dropped: [index: number, reason: DropReason, item: ItemTuple][];
}

type ItemTuple = [
  index: number,
  type: EnrichedItem['type'],
  event: string | null,
  distinctId: string | null,
  anonymousId: string | null,
  sessionId: string | null,
  insertId: string | null,
  timestamp: number,
  propertiesJson: string,
  storedJson: string | undefined,
  enrichment: Record<string, unknown>,
  userAgent: string | null,
  droppedKeys: string[],
];

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
    items: t.items.map((i) => new TransferredItem(i)),
    dropped: t.dropped.map(([index, reason, item]) => ({ index, reason, item: new TransferredItem(item) })),
  };
}

function pack(i: EnrichedItem): ItemTuple {
  // The checks write propertiesJson for every valid item (check-item.ts).
  return [
    i.index, i.type, i.event, i.distinctId, i.anonymousId, i.sessionId, i.insertId, i.timestamp,
    i.propertiesJson!, i.storedJson, i.enrichment, i.userAgent, i.droppedKeys,
  ];
}

/** An enriched item from a check thread: its properties are parsed from their text on first use. */
class TransferredItem implements EnrichedItem {
  readonly index: number;
  readonly type: EnrichedItem['type'];
  readonly event: string | null;
  readonly distinctId: string | null;
  readonly anonymousId: string | null;
  readonly sessionId: string | null;
  readonly insertId: string | null;
  readonly timestamp: number;
  readonly propertiesJson: string;
  readonly storedJson: string | undefined;
  readonly enrichment: Record<string, unknown>;
  readonly userAgent: string | null;
  readonly droppedKeys: string[];
  private parsed: JsonObject | undefined;

  constructor(t: ItemTuple) {
    this.index = t[0];
    this.type = t[1];
    this.event = t[2];
    this.distinctId = t[3];
    this.anonymousId = t[4];
    this.sessionId = t[5];
    this.insertId = t[6];
    this.timestamp = t[7];
    this.propertiesJson = t[8];
    this.storedJson = t[9];
    this.enrichment = t[10];
    this.userAgent = t[11];
    this.droppedKeys = t[12];
  }

  get properties(): JsonObject {
    return (this.parsed ??= JSON.parse(this.propertiesJson) as JsonObject);
  }
}
