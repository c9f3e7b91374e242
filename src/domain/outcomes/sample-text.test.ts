import { expect, it } from 'vitest';
import { SAMPLE_MAX_BYTES, sampleText } from './sample-text.js';

it('an item within the limit is kept as JSON.stringify writes it', () => {
  const item = { event: 'e', distinct_id: 'u', properties: { a: [1, 'two', null, { b: true }], skipped: undefined }, n: 1.5 };
  expect(sampleText(item)).toEqual({ text: JSON.stringify(item), cut: false });
  expect(sampleText([undefined, 'x'])).toEqual({ text: '[null,"x"]', cut: false });
});

it('a 1 MiB item is cut to 16 KiB of UTF-8 and marked', () => {
  const r = sampleText({ event: 'e', properties: { pad: 'é'.repeat(1024 * 1024) } });
  expect(r.cut).toBe(true);
  expect(Buffer.byteLength(r.text)).toBeLessThanOrEqual(SAMPLE_MAX_BYTES);
  expect(Buffer.byteLength(r.text)).toBeGreaterThan(SAMPLE_MAX_BYTES - 4);
  expect(r.text.startsWith('{"event":"e","properties":{"pad":"éé')).toBe(true);
});

it('text under the limit in characters but over it in bytes is cut, never inside a surrogate pair', () => {
  const r = sampleText('😀'.repeat(6000));
  expect(r.cut).toBe(true);
  expect(Buffer.byteLength(r.text)).toBeLessThanOrEqual(SAMPLE_MAX_BYTES);
  expect(Buffer.from(r.text).toString()).toBe(r.text);
  expect(r.text).not.toContain('\ufffd');
});
