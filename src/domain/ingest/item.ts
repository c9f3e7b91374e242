/**
 * What an item is, declared once: the pipeline builds items of these types,
 * carries them across the check thread, and hands them to the ingest pass.
 * Everything else derives from FieldsByType: the names of the types, the item
 * union, the pipeline's item and the fields sent between threads. Adding a
 * type here makes every `switch` on an item's type that does not handle it
 * fail to compile (each ends in unhandledType); docs/design.md lists them.
 */

/** Fields every item has, whatever its type. */
interface CommonFields {
  /** Position in the request. */
  index: number;
  distinctId: string | null;
  anonymousId: string | null;
  sessionId: string | null;
  insertId: string | null;
  /** Epoch ms. */
  timestamp: number;
  /** A track's properties, or the traits an identify sets on a person or a group item on a group (none for an alias). */
  properties: Record<string, unknown>;
  /** `properties` as JSON text: the checks write it as they measure it. */
  propertiesJson: string;
  /** Server-set properties stored with a track event ($source_id, $browser, ...); none for an identify. */
  enrichment: Record<string, unknown>;
}

/** What each type of item holds besides, or instead of, the common fields. */
interface FieldsByType {
  track: {
    type: 'track';
    event: string;
    /** The event's stored properties text (storedProperties), rendered where the body is checked. */
    storedJson: string;
  };
  identify: {
    type: 'identify';
    /** An identify has no event name. */
    event: null;
    /** The user id the traits are set on. */
    distinctId: string;
    /** Traits set only where the person has no value for the key yet; null when not sent. */
    setOnce: Record<string, unknown> | null;
    /** Trait keys removed as of the item's timestamp; null when not sent. */
    unset: string[] | null;
  };
  group: {
    type: 'group';
    /** A group item has no event name. */
    event: null;
    /** Its kind ("company"): one of at most five per project. */
    groupType: string;
    /** The group's own id within its type. */
    groupKey: string;
  };
  alias: {
    type: 'alias';
    /** An alias has no event name. */
    event: null;
    /** The user id whose person `previousId` joins. */
    distinctId: string;
    /** The id that from now on means the same person as `distinctId`. */
    previousId: string;
  };
}

export type ItemType = keyof FieldsByType;

/** An item of type T (of any type unless T says). */
export type IngestItem<T extends ItemType = ItemType> = { [K in T]: Omit<CommonFields, keyof FieldsByType[K]> & FieldsByType[K] }[T];

/** Every item type, at run time, in the order the reference lists them. */
export const ITEM_TYPES = Object.keys({ track: true, identify: true, group: true, alias: true } satisfies Record<ItemType, true>) as ItemType[];

/**
 * The `default` of a switch on an item's type: with every type handled its
 * argument is `never`; a type left out fails to compile there.
 */
export function unhandledType(item: never): never {
  // The item itself stays out of the message: errors are logged, and it holds properties.
  throw new Error(`An item of a type this code does not handle reached it (${typeof item}).`);
}
