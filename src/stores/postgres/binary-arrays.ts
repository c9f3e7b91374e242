/**
 * Array parameters in PostgreSQL's binary format (what array_send writes),
 * for the bulk writes of an ingest pass. `pg` sends a Buffer parameter as
 * binary, and the statement's cast (`$n::text[]`) names the type the server
 * reads it as.
 *
 * Why not `pg`'s own arrays: it writes a text literal, escaping every element
 * with two regular expressions, and the server then scans that literal back
 * for quotes and backslashes. Event properties are JSON, full of quotes: the
 * escaping was a quarter of the ingest pass's CPU on PostgreSQL. In binary
 * each element is its length and its bytes, with nothing to escape either way.
 */

const OID = { int8: 20, text: 25, uuid: 2950, jsonb: 3802 } as const;

/**
 * One dimension, lower bound 1: the header (dimensions, has-nulls flag,
 * element type, then the dimension's length and lower bound), then each
 * element as its length (-1 for NULL) and its bytes.
 */
function encode<T>(oid: number, values: readonly (T | null)[], size: (v: T) => number, write: (v: T, buf: Buffer, at: number) => number): Buffer {
  let bytes = 0;
  let hasNulls = false;
  for (const v of values) {
    if (v === null) hasNulls = true;
    else bytes += size(v);
  }
  const headerSize = values.length === 0 ? 12 : 20;
  const buf = Buffer.allocUnsafe(headerSize + values.length * 4 + bytes);
  buf.writeInt32BE(values.length === 0 ? 0 : 1, 0);
  buf.writeInt32BE(hasNulls ? 1 : 0, 4);
  buf.writeInt32BE(oid, 8);
  if (values.length > 0) {
    buf.writeInt32BE(values.length, 12);
    buf.writeInt32BE(1, 16);
  }
  let at = headerSize;
  for (const v of values) {
    if (v === null) {
      buf.writeInt32BE(-1, at);
      at += 4;
      continue;
    }
    const n = write(v, buf, at + 4);
    buf.writeInt32BE(n, at);
    at += 4 + n;
  }
  return buf;
}

const utf8Size = (v: string): number => Buffer.byteLength(v, 'utf8');

export function textArray(values: readonly (string | null)[]): Buffer {
  return encode(OID.text, values, utf8Size, (v, buf, at) => buf.write(v, at, 'utf8'));
}

/** JSON texts as jsonb[]: the server parses each as it would `'…'::jsonb`. Each starts with jsonb's format version, 1. */
export function jsonbArray(values: readonly string[]): Buffer {
  return encode(OID.jsonb, values, (v) => 1 + utf8Size(v), (v, buf, at) => {
    buf[at] = 1;
    return 1 + buf.write(v, at + 1, 'utf8');
  });
}

/** Integers (safe integers, as epoch ms are) as bigint[]. */
export function int8Array(values: readonly number[]): Buffer {
  return encode(OID.int8, values, () => 8, (v, buf, at) => {
    if (!Number.isSafeInteger(v)) throw new RangeError(`not a safe integer for a bigint: ${v}`);
    // Two's complement in two halves: the high half is floored, so the low half is always 0..2^32-1.
    const hi = Math.floor(v / 0x1_0000_0000);
    buf.writeInt32BE(hi, at);
    buf.writeUInt32BE(v - hi * 0x1_0000_0000, at + 4);
    return 8;
  });
}

/** Value of each hex digit by character code; -1 for any other character. */
const HEX = new Int8Array(128).fill(-1);
for (let c = 0; c < 10; c++) HEX[48 + c] = c;
for (let c = 0; c < 6; c++) HEX[65 + c] = HEX[97 + c] = 10 + c;

/** UUIDs in their usual text form (8-4-4-4-12 hex digits, either case) as uuid[]. */
export function uuidArray(values: readonly (string | null)[]): Buffer {
  return encode(OID.uuid, values, () => 16, writeUuid);
}

function writeUuid(v: string, buf: Buffer, at: number): number {
  const bad = (): never => {
    throw new RangeError(`not a UUID: ${JSON.stringify(v)}`);
  };
  if (v.length !== 36) bad();
  for (let i = 0, out = at; i < 36; i += 2) {
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (v.charCodeAt(i) !== 45) bad();
      i--;
      continue;
    }
    const hi = HEX[v.charCodeAt(i)] ?? -1;
    const lo = HEX[v.charCodeAt(i + 1)] ?? -1;
    if (hi < 0 || lo < 0) bad();
    buf[out++] = (hi << 4) | lo;
  }
  return 16;
}
