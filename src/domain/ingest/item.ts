/**
 * What an item is: the union of the types of the registry
 * (src/domain/items/registry.ts), each declared in its own file there. The
 * pipeline builds items of these types, carries them across the check thread,
 * and hands them to the ingest pass. Adding a type to the registry makes
 * every `switch` on an item's type that does not handle it fail to compile
 * (each ends in unhandledType), and every Record keyed by ItemType.
 */
import type { ItemKind } from '../items/kind.js';
import { ITEM_KINDS } from '../items/registry.js';

type Kinds = typeof ITEM_KINDS;
type ItemOfKind<K> = K extends ItemKind<infer I> ? I : never;

export type ItemType = keyof Kinds;

/** An item of type T (of any type unless T says). */
export type IngestItem<T extends ItemType = ItemType> = { [K in T]: ItemOfKind<Kinds[K]> }[T];

/** Every item type, at run time, in the order the reference lists them. */
export const ITEM_TYPES = Object.keys(ITEM_KINDS) as ItemType[];

/** The item types as prose and messages name them, each as `show` writes it: "track, identify, group or alias". */
export function typesListed(show: (t: ItemType) => string, last: 'or' | 'and'): string {
  const words = ITEM_TYPES.map(show);
  return words.length === 1 ? words[0]! : `${words.slice(0, -1).join(', ')} ${last} ${words.at(-1)}`;
}

/**
 * What each type declares, to be called with an item of any type: a type's
 * kind is one of any type because ItemKind's members are methods.
 */
export const KINDS: Record<ItemType, ItemKind<IngestItem>> = ITEM_KINDS;

/**
 * The `default` of a switch on an item's type: with every type handled its
 * argument is `never`; a type left out fails to compile there.
 */
export function unhandledType(item: never): never {
  // The item itself stays out of the message: errors are logged, and it holds properties.
  throw new Error(`An item of a type this code does not handle reached it (${typeof item}).`);
}
