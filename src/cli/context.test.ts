import { afterEach, describe, expect, it, vi } from 'vitest';
import { UsageError, fail, parseWhole } from './context.js';

describe('parseWhole (fault 13: numbers are not bounded)', () => {
  const range = { min: 0, max: 1_000_000_000_000 };
  it('takes digits within the range, exactly', () => {
    expect(parseWhole('0', '--n', range)).toBe(0);
    expect(parseWhole('0001000', '--n', range)).toBe(1000);
    expect(parseWhole('1000000000000', '--n', range)).toBe(1e12);
  });

  it('refuses anything else, saying the range', () => {
    for (const v of ['99999999999999999999', '9007199254740993', '1000000000001', '-1', '1e3', '1.5', '0x10', ' 5', '+5', '', 'Infinity', '５']) {
      expect(() => parseWhole(v, '--n', range), v).toThrow(new UsageError(`--n takes a whole number from 0 to 1,000,000,000,000, not "${v}".`));
    }
    expect(() => parseWhole('0', '--limit', { min: 1, max: 10 })).toThrow('--limit takes a whole number from 1 to 10, not "0".');
  });
});

describe('fail (fault 8: what stderr says of an unexpected error)', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    process.exitCode = undefined;
  });
  const said = (e: unknown): string => {
    let out = '';
    vi.spyOn(process.stderr, 'write').mockImplementation((s) => ((out += String(s)), true));
    fail(e);
    return out;
  };

  it("keeps a system call's message and leaves out one that may quote data", () => {
    const inUse = Object.assign(new Error('listen EADDRINUSE: address already in use 127.0.0.1:8080'), { code: 'EADDRINUSE', syscall: 'listen' });
    expect(said(inUse)).toBe('inlet: unexpected failure: listen EADDRINUSE: address already in use 127.0.0.1:8080\n');
    const refused = Object.assign(new Error('invalid input syntax for type json: "secret"'), { severity: 'ERROR', code: '22P02', where: 'secret' });
    expect(said(refused)).toBe('inlet: unexpected failure: Error 22P02 (its message is left out, as it may quote data)\n');
    expect(process.exitCode).toBe(2);
  });
});
