import type { Refusal } from '../domain/intake/refusal.js';

/** 1 MiB: the most a body may be, as sent and once decompressed. */
export const MAX_BODY_BYTES = 1_048_576;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** The body as UTF-8 JSON. */
export function parseJsonBody(bytes: Uint8Array): { json: unknown } | Refusal {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return { code: 'invalid_json', message: 'The body is not valid UTF-8; encode the JSON as UTF-8.' };
  }
  try {
    return { json: JSON.parse(text) };
  } catch (e) {
    return { code: 'invalid_json', message: `The body is not valid JSON (${(e as Error).message}).` };
  }
}

/** The refusal of a body over MAX_BODY_BYTES, `how` saying when: "as sent" or "once decompressed". */
export function bodyTooLarge(how: string): Refusal {
  return {
    code: 'payload_too_large',
    message: `The body is over 1 MiB (1,048,576 bytes) ${how}. Split the batch into smaller requests.`,
    // The rest of an oversized body is never read, so the connection cannot be reused.
    headers: { Connection: 'close' },
  };
}

/** The refusal of a body that is not a gzip stream. */
export const BROKEN_GZIP: Refusal = { code: 'invalid_json', message: 'The body is not a valid gzip stream; compress it with gzip or drop Content-Encoding.' };
