import { randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** `n` random base62 characters, without modulo bias. */
export function randomBase62(n: number): string {
  let out = '';
  while (out.length < n) {
    for (const b of randomBytes(n * 2)) {
      // 248 = 4 * 62: bytes at or above it would favour the first characters.
      if (b < 248) out += BASE62[b % 62];
      if (out.length === n) break;
    }
  }
  return out;
}

/** An id for an org, project, source or key: `prefix_` and 16 base62 characters. */
export function newId(prefix: 'org' | 'prj' | 'src' | 'key' | 'req'): string {
  return `${prefix}_${randomBase62(16)}`;
}

/** A person id, the same form browser persons have. */
export function newPersonId(): string {
  return `per_${randomBase62(22)}`;
}

/**
 * An event id: a UUIDv7, so ids sort by creation time, which keeps inserts
 * at the end of indexes and lets stores range-scan by id.
 */
export function newEventId(now: number): string {
  const b = randomBytes(16);
  b.writeUIntBE(now, 0, 6);
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
