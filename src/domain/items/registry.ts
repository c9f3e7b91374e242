/**
 * The item types: one line each. A type is a file beside this one declaring
 * its internal shape, its wire fields and their checks, what it writes,
 * whether it is metered, what the store may refuse and its OpenAPI schema
 * (kind.ts lists it all): a new type is that file and a line here.
 * docs/design.md, "Adding an item type", tells how, and what the compiler
 * cannot point at (a new field's place in the order faults are listed in, the
 * reference's prose).
 *
 * Everything that handles items iterates this, and the names of the types,
 * the item union (ingest/item.ts) and the fields sent between threads derive
 * from it; what must still be written per type is keyed by ItemType in a
 * Record or a switch ending in unhandledType, so a type added here makes the
 * compiler point at each.
 *
 * A type's checks are built of the field rules in fields/ (field errors,
 * names and ids, timestamps, properties, enrichment), which the intakes'
 * maps and the pipeline's steps share.
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
