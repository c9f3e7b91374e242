import { describe, expect, it } from 'vitest';
import { MAX_ECHO, cutText, echoed, quoted } from './echo.js';

describe('what an answer repeats of client text', () => {
  it('fault: a refused key of any length was echoed whole; it is cut to MAX_ECHO code points, with its length said', () => {
    const key = '$' + 'k'.repeat(900_000);
    expect(echoed(key)).toBe(key.slice(0, MAX_ECHO) + '…');
    expect(quoted(key)).toBe(`"${key.slice(0, MAX_ECHO)}…" (900001 characters)`);
    expect(quoted('$short')).toBe('"$short"');
    expect(echoed('x'.repeat(MAX_ECHO))).toBe('x'.repeat(MAX_ECHO));
  });

  it('counts code points and never splits a surrogate pair', () => {
    expect(cutText('😀😀😀', 2)).toBe('😀😀…');
    expect(cutText('😀😀', 2)).toBe('😀😀');
    expect(cutText('ab😀', 2)).toBe('ab…');
    expect(quoted('😀'.repeat(MAX_ECHO + 1))).toBe(`"${'😀'.repeat(MAX_ECHO)}…" (${MAX_ECHO + 1} characters)`);
  });
});
