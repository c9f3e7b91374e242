import * as crypto from 'node:crypto';

/**
 * SHA-256 of a string (UTF-8). Uses the one-shot `crypto.hash` where the
 * runtime has it (Node 20.12 and later): it costs half of a `createHash`
 * object per call, and this runs for every insert_id and every request's key.
 * Both give the same bytes.
 */
export const sha256: (text: string) => Buffer =
  typeof crypto.hash === 'function'
    ? (text) => crypto.hash('sha256', text, 'buffer')
    : (text) => crypto.createHash('sha256').update(text).digest();
