/**
 * What every store engine can keep. An item that passes validation must be
 * storable on every engine by construction, so whatever one engine could
 * refuse is refused (or cleaned) before the write, the same way for all of
 * them. PostgreSQL is the strictest: text and jsonb cannot hold U+0000 or a
 * lone surrogate, a btree index row holds at most 2,704 bytes, and a number
 * must mean the same after a round trip through its text. Every path to
 * storage (item fields, property and trait keys and values at every depth,
 * enrichment output, admin names) goes through the rules in this file.
 */

/**
 * Longest property or trait key, in code points: at most 1,020 bytes of
 * UTF-8, which with a project and a person id stays well under PostgreSQL's
 * 2,704-byte index row (trait keys are part of a primary key), even when
 * nothing of the key compresses. No real property name comes near it.
 */
export const MAX_KEY_LENGTH = 255;

/** Number of code points; a surrogate pair counts once. */
export function codePointLength(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** False when the string holds U+0000 or a lone surrogate, which PostgreSQL text and jsonb refuse. */
export function isStorableText(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0) return false;
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (d < 0xdc00 || d > 0xdfff) return false;
      i++;
    } else if (c >= 0xdc00 && c <= 0xdfff) {
      return false;
    }
  }
  return true;
}

/**
 * False for a number that does not survive storage exactly: not finite, or
 * an integer beyond ±(2^53−1), which is read back as another integer.
 */
export function isStorableNumber(n: number): boolean {
  return Number.isFinite(n) && (!Number.isInteger(n) || Number.isSafeInteger(n));
}

/** Why a key cannot be stored, or null when it can. */
export type KeyFault = { kind: 'text' } | { kind: 'length'; length: number };

/** The rule for a property or trait key, at any depth. */
export function keyFault(key: string): KeyFault | null {
  if (!isStorableText(key)) return { kind: 'text' };
  // Code units bound code points from above: most keys skip the count.
  if (key.length <= MAX_KEY_LENGTH) return null;
  const length = codePointLength(key);
  return length > MAX_KEY_LENGTH ? { kind: 'length', length } : null;
}
