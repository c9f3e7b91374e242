import type { Refusal } from './refusal.js';

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
