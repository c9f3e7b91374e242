import { describe, expect, it } from 'vitest';
import { ITEM_TYPES, KINDS } from '../domain/ingest/item.js';
import { componentSchemas } from './schemas.js';

describe('each item type of the registry', () => {
  const schemas = componentSchemas();

  it.each(ITEM_TYPES)('%s: its schema documents the fields it reads and those it ignores, and no other', (t) => {
    const kind = KINDS[t];
    const documented = Object.keys((schemas[kind.schemaName] as { properties: Record<string, unknown> }).properties);
    expect(new Set(documented)).toEqual(new Set([...kind.wireFields, ...kind.ignores]));
  });

  it.each(ITEM_TYPES)('%s: requires only fields it reads, and ignores none of them', (t) => {
    const kind = KINDS[t];
    expect(kind.wireFields).toEqual(expect.arrayContaining([...kind.requiredFields]));
    expect(kind.ignores.filter((f) => kind.wireFields.includes(f))).toEqual([]);
  });

  it('is one of the Item schema\'s choices, in the registry\'s order', () => {
    expect(schemas.Item!.oneOf).toEqual(ITEM_TYPES.map((t) => ({ $ref: `#/components/schemas/${KINDS[t].schemaName}` })));
  });
});
