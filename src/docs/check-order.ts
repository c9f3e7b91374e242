/**
 * The order in which a request is checked, as the reference page states it.
 * A request is answered with the first step it fails. test/http/check-order.test.ts
 * holds the server to this list: for each step, a request that fails it and
 * every later step it can also fail gets this step's answer.
 */
import type { RequestErrorCode } from '../errors/codes.js';
import { ADMISSION_WAIT_MS, BATCH_PATH, IMPORT_PATH, KEY_RPS, MAX_BODY_BYTES, MAX_ITEMS, formatNumber } from './facts.js';

/** One step: what is checked (inline markdown), and the codes it answers with when it fails. */
export interface CheckStep {
  /** Stable name of the step, for the test that holds the server to it. */
  id: string;
  check: string;
  codes: RequestErrorCode[];
}

const MIB = `1 MiB (${formatNumber(MAX_BODY_BYTES)} bytes)`;

/** Every step in order; a request that passes them all is answered 202, or 200 with validate=true. */
export const CHECK_ORDER: readonly CheckStep[] = [
  {
    id: 'http',
    check:
      'The request is not valid HTTP/1.1 (no `Host` or two, two `Content-Length`s or one with `Transfer-Encoding`, an unknown method), its headers are over 16 KiB, or it did not arrive in full within 30 s',
    codes: ['bad_request', 'headers_too_large', 'request_timeout'],
  },
  { id: 'stopping', check: 'The server is stopping (it got SIGTERM): every request that arrives from then on', codes: ['collection_unavailable'] },
  { id: 'path', check: `The path is neither \`${BATCH_PATH}\` nor \`${IMPORT_PATH}\` (an unknown \`/api/v1/…\` path or an unknown version), or the host is a tracker domain`, codes: ['not_found'] },
  { id: 'retired', check: 'The path is under a retired API version', codes: ['api_version_retired'] },
  { id: 'method', check: 'The method is not POST (OPTIONS included)', codes: ['method_not_allowed'] },
  { id: 'browser', check: 'It looks like a browser: `Origin`, or `Sec-Fetch-*` other than a lone `Sec-Fetch-Mode: cors`', codes: ['browser_not_allowed'] },
  { id: 'missing-key', check: 'No Bearer key', codes: ['missing_key'] },
  { id: 'invalid-key', check: 'The key does not work', codes: ['invalid_key'] },
  { id: 'api-off', check: "The key's project does not have the API switched on", codes: ['not_found'] },
  { id: 'key-rate', check: `The key sent more than ${KEY_RPS} requests in the last second (by default)`, codes: ['rate_limited'] },
  { id: 'query', check: 'A query parameter is unknown, repeated, or not true/false', codes: ['invalid_query'] },
  { id: 'content-type', check: 'Content-Type is not JSON', codes: ['unsupported_media_type'] },
  { id: 'encoding', check: 'Content-Encoding is not gzip or identity', codes: ['unsupported_encoding'] },
  { id: 'size', check: `The body is over ${MIB}, as sent or decompressed`, codes: ['payload_too_large'] },
  {
    id: 'reading',
    check:
      "No room to read the body: the server's budget for bodies being read, or the key's share of it, is spent (checked against Content-Length before a byte is read, and as a chunked body arrives); the connection is closed",
    codes: ['collection_unavailable'],
  },
  {
    id: 'room',
    check: `The body is read, but the bodies the server already holds leave no room for it within ${ADMISSION_WAIT_MS / 1000} s (by default), or too many bodies wait already`,
    codes: ['collection_unavailable'],
  },
  { id: 'json', check: 'The body is not UTF-8 JSON, or the gzip stream is broken', codes: ['invalid_json'] },
  { id: 'body', check: 'The body is not an object with an `items` array', codes: ['invalid_body'] },
  { id: 'count', check: `\`items\` is empty, or holds more than ${MAX_ITEMS}`, codes: ['batch_empty', 'batch_too_many_items'] },
  { id: 'project-rate', check: "The items would overflow one of the project's windows", codes: ['rate_limited'] },
  { id: 'items', check: 'Items are checked; with strict=true any invalid item, else all of them invalid', codes: ['strict_item_invalid', 'all_items_invalid'] },
  { id: 'write', check: 'The durable write fails', codes: ['collection_unavailable'] },
];
