import { randomFillSync } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// Ids are made for every event, person and request; one call into the system's
// random source per id cost more than the rest of id making. The same
// generator fills a pool instead, and ids take from it.
const POOL_SIZE = 64 * 1024;
const pool = Buffer.allocUnsafe(POOL_SIZE);
let poolAt = POOL_SIZE;

/** `n` bytes from the cryptographic random source (a view into the pool: copy to keep). */
function randomBytes(n: number): Buffer {
  if (poolAt + n > POOL_SIZE) {
    randomFillSync(pool);
    poolAt = 0;
  }
  poolAt += n;
  return pool.subarray(poolAt - n, poolAt);
}

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
export function newId(prefix: 'org' | 'prj' | 'src' | 'key' | 'req' | 'pln'): string {
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
  const b = Buffer.from(randomBytes(16));
  b.writeUIntBE(now, 0, 6);
  b[6] = (b[6]! & 0x0f) | 0x70;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
