import { describe, expect, it } from 'vitest';
import { item } from '../../../test/helpers/items.js';
import { ITEM_TYPES, type IngestItem, unhandledType } from './item.js';

/** A switch that forgets identify items, as the pass's `else` once stood for them unnamed. */
function eventNameOf(i: IngestItem): string {
  switch (i.type) {
    case 'track':
      return i.event;
    default:
      // @ts-expect-error identify is not handled: unhandledType takes only `never` (typecheck fails if this compiles)
      return unhandledType(i);
  }
}

describe('an item type left out of a switch on the type', () => {
  it('fails to compile, and fails loudly at run time without naming what the item holds', () => {
    const identify = item({ type: 'identify', distinctId: 'u_1', properties: { email: 'kim@example.com' } }, 0);
    expect(() => eventNameOf(identify)).toThrow(/not handle/);
    expect(() => eventNameOf(identify)).not.toThrow(/kim@example\.com|u_1/);
  });

  it('is one of the types the checks accept, listed once', () => {
    expect(ITEM_TYPES).toEqual(['track', 'identify', 'group', 'alias']);
  });
});
