/**
 * The item types: one line each. A type is a file beside this one declaring
 * its internal shape, its wire fields, what it writes, whether it is metered,
 * what the store may refuse and its OpenAPI schema (kind.ts lists it all);
 * docs/design.md, "Adding an item type", tells how to add one.
 *
 * Everything that handles items iterates this, and the names of the types,
 * the item union (ingest/item.ts) and the fields sent between threads derive
 * from it; what must still be written per type is keyed by ItemType in a
 * Record or a switch ending in unhandledType, so a type added here makes the
 * compiler point at each.
 *
 * Why the field checks are not here: they are built of the pipeline's field
 * rules (field errors, names and ids, timestamps, properties), which the
 * intakes share, and the domain does not import the pipeline. They are a
 * `Record<ItemType, …>` in pipeline/type-checks.ts, the one other place a new
 * type is written, which the compiler asks for.
 */
import { alias } from './alias.js';
import { group } from './group.js';
import { identify } from './identify.js';
import { track } from './track.js';

/** In the order the reference lists them. */
export const ITEM_KINDS = {
  track,
  identify,
  group,
  alias,
};
