import { describe, expect, it } from 'vitest';
import { storedProperties } from './stored-properties.js';

/** What the text must equal: the properties, then the enrichment, serialised in one go. */
const whole = (p: Record<string, unknown>, e: Record<string, unknown>) => JSON.stringify({ ...p, ...e });

describe('storedProperties', () => {
  const cases: [string, Record<string, unknown>, Record<string, unknown>][] = [
    ['none at all', {}, {}],
    ['properties only', { plan: 'pro', n: 1, nested: { a: [1, 'x'] } }, {}],
    ['enrichment only', {}, { $source_id: 'src_1', $browser: 'Chrome' }],
    ['both', { plan: 'pro', '': 0 }, { $source_id: 'src_1', $os: 'iOS' }],
    ['array-index keys of the item, which JSON writes first', { b: 1, 7: 'seven', 2: 'two' }, { $source_id: 'src_1' }],
    ['a "__proto__" key read from JSON', JSON.parse('{"__proto__": {"x": 1}, "a": 2}') as Record<string, unknown>, { $source_id: 'src_1' }],
    ['a key in both', { $source_id: 'sent', a: 1 }, { $source_id: 'src_1' }],
    ['an enrichment key that is an array index', { a: 1 }, { 3: 'x', $source_id: 'src_1' }],
  ];
  for (const [name, properties, enrichment] of cases) {
    it(`is the properties then the enrichment as JSON: ${name}`, () => {
      expect(storedProperties({ properties, propertiesJson: JSON.stringify(properties), enrichment })).toBe(whole(properties, enrichment));
    });
  }

  it("reuses the checks' text instead of serialising the properties again", () => {
    expect(storedProperties({ properties: { a: 1 }, propertiesJson: '{"a":"from the checks"}', enrichment: { $source_id: 's' } })).toBe('{"a":"from the checks","$source_id":"s"}');
  });
});
