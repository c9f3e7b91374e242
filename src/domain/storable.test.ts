import { describe, expect, it } from 'vitest';
import { MAX_KEY_LENGTH, codePointLength, isStorableNumber, isStorableText, keyFault } from './storable.js';

describe('the storability rule', () => {
  it('text: anything but U+0000 and a lone surrogate', () => {
    for (const s of ['', 'plain', '\u2028\u2029', '\u202e\u200f', '\u{1F600}', '\u{10FFFF}', '\uffff', '\u0001\u007f', '\\u0000']) {
      expect(isStorableText(s), JSON.stringify(s)).toBe(true);
    }
    for (const s of ['\u0000', 'a\u0000', '\ud800', 'x\udfff', '\ud83d', '\ude00\ud83d', `${'\u{1F600}'.slice(0, 1)}`]) {
      expect(isStorableText(s), JSON.stringify(s)).toBe(false);
    }
  });

  it('numbers: finite, and integers only within ±(2^53−1)', () => {
    for (const n of [0, -0, 1.5, 5e-324, 0.1 + 0.2, 2 ** 53 - 1, -(2 ** 53 - 1)]) expect(isStorableNumber(n), String(n)).toBe(true);
    for (const n of [2 ** 53, -(2 ** 53), 1e21, 1.5e300, Number.POSITIVE_INFINITY, Number.NaN]) expect(isStorableNumber(n), String(n)).toBe(false);
  });

  it(`keys: storable text of at most ${MAX_KEY_LENGTH} code points`, () => {
    expect(keyFault('k'.repeat(MAX_KEY_LENGTH))).toBeNull();
    expect(keyFault('\u{1F600}'.repeat(MAX_KEY_LENGTH))).toBeNull();
    expect(keyFault('k'.repeat(MAX_KEY_LENGTH + 1))).toEqual({ kind: 'length', length: MAX_KEY_LENGTH + 1 });
    expect(keyFault('\u{1F600}'.repeat(MAX_KEY_LENGTH + 1))).toEqual({ kind: 'length', length: MAX_KEY_LENGTH + 1 });
    expect(keyFault('a\u0000')).toEqual({ kind: 'text' });
    // In UTF-8 the longest key takes under half of the 2,704 bytes of a PostgreSQL index row.
    expect(Buffer.byteLength('\u{10FFFF}'.repeat(MAX_KEY_LENGTH))).toBeLessThanOrEqual(2704 / 2);
    expect(codePointLength('\u{1F600}a\ud800')).toBe(3);
  });
});
