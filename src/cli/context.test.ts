import { describe, expect, it } from 'vitest';
import { UsageError, parseWhole } from './context.js';

describe('parseWhole (fault 13: numbers are not bounded)', () => {
  const range = { min: 0, max: 1_000_000_000_000 };
  it('takes digits within the range, exactly', () => {
    expect(parseWhole('0', '--n', range)).toBe(0);
    expect(parseWhole('0001000', '--n', range)).toBe(1000);
    expect(parseWhole('1000000000000', '--n', range)).toBe(1e12);
  });

  it('refuses anything else, saying the range', () => {
    for (const v of ['99999999999999999999', '9007199254740993', '1000000000001', '-1', '1e3', '1.5', '0x10', ' 5', '+5', '', 'Infinity', '５']) {
      expect(() => parseWhole(v, '--n', range), v).toThrow(new UsageError(`--n takes a whole number from 0 to 1000000000000, not "${v}".`));
    }
    expect(() => parseWhole('0', '--limit', { min: 1, max: 10 })).toThrow('--limit takes a whole number from 1 to 10, not "0".');
  });
});
