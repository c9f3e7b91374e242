/** A 32-bit hash of a (source, insert_id) pair, as an unsigned integer. */
export type PairHash = (sourceId: string, insertId: string) => number;

/** One step of MurmurHash3 (32-bit): takes in a 32-bit block. */
function mix(h: number, block: number): number {
  let k = Math.imul(block, 0xcc9e2d51);
  k = (k << 15) | (k >>> 17);
  h ^= Math.imul(k, 0x1b873593);
  h = (h << 13) | (h >>> 19);
  return (Math.imul(h, 5) + 0xe6546b64) | 0;
}

/** Takes in a string two UTF-16 code units a block, then its length (so no two pairs run together). */
function feed(h: number, s: string): number {
  const n = s.length;
  let i = 0;
  for (; i + 1 < n; i += 2) h = mix(h, s.charCodeAt(i) | (s.charCodeAt(i + 1) << 16));
  if (i < n) h = mix(h, s.charCodeAt(i));
  return mix(h, n);
}

/** MurmurHash3's finaliser: every input bit reaches every output bit, the low ones included. */
function finish(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

let lastSource = '';
let lastSourceState = feed(0, '');

/**
 * MurmurHash3-style over the source, then the insert_id. Not cryptographic,
 * and needs not be: a pair it confuses with another costs one row read
 * (insert-ids.ts). Lookups come a source at a time, so the source's part is
 * kept from the call before. Lives in memory only: changing it needs no migration.
 */
export const pairHash: PairHash = (sourceId, insertId) => {
  if (sourceId !== lastSource) {
    lastSource = sourceId;
    lastSourceState = feed(0, sourceId);
  }
  return finish(feed(lastSourceState, insertId));
};
