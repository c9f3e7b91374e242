import { expect, it } from 'vitest';
import { ITEM_KINDS } from '../domain/items/registry.js';
import { FIELD_ORDER } from './check-batch.js';

// An item's errors are listed in FIELD_ORDER; a field missing there would be listed
// before `item` and `type`, so an item type that reads a new wire field must place it.
it('every wire field of every item type has its place in the order errors are listed in', () => {
  const unplaced = Object.entries(ITEM_KINDS).flatMap(([type, kind]) =>
    kind.wireFields.filter((f) => !FIELD_ORDER.includes(f)).map((f) => `${type}.${f}`),
  );
  expect(unplaced).toEqual([]);
});
