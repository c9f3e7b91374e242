/** One HTTP attempt: the batch out, the answer read into a step. Never throws. */
import { promisify } from 'node:util';
import { gzip as gzipCallback } from 'node:zlib';
import { type Step, parseRetryAfter, stepFor } from './answer.js';

const gzip = promisify(gzipCallback);

export interface TransportOptions {
  url: string;
  key: string;
  gzip: boolean;
  timeoutMs: number;
  userAgent: string;
}

/** The most a request body may be, as sent and once decompressed. */
export const MAX_BODY_BYTES = 1_048_576;

/** The body of a batch of items already serialised, compressed off the main thread when asked; null when it is over the limit uncompressed. */
export async function encodeBatch(items: string[], compress: boolean): Promise<Buffer | null> {
  const json = Buffer.from(`{"items":[${items.join(',')}]}`);
  if (json.length > MAX_BODY_BYTES) return null;
  return compress ? gzip(json) : json;
}

/** The rate-limit header fields of an answer, for pacing. */
export interface RateLimitHeaders {
  policy: string | null;
  state: string | null;
}

export interface Attempted {
  step: Step;
  /** Null when there was no answer. */
  limits: RateLimitHeaders | null;
}

/** Posts one batch; network errors, timeouts and aborts come back as a retry step. */
export async function attempt(opts: TransportOptions, body: Buffer, size: number, abort: AbortSignal): Promise<Attempted> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${opts.key}`,
    'content-type': 'application/json',
    'user-agent': opts.userAgent,
  };
  if (opts.gzip) headers['content-encoding'] = 'gzip';
  try {
    const res = await fetch(opts.url, {
      method: 'POST',
      headers,
      body: new Uint8Array(body),
      signal: AbortSignal.any([abort, AbortSignal.timeout(opts.timeoutMs)]),
    });
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const limits = { policy: res.headers.get('ratelimit-policy'), state: res.headers.get('ratelimit') };
    return { step: stepFor(res.status, json, size, parseRetryAfter(res.headers.get('retry-after'), Date.now())), limits };
  } catch (e) {
    return { step: { kind: 'retry', error: describe(e), retryAfterMs: null }, limits: null };
  }
}

function describe(e: unknown): string {
  if (e instanceof Error) {
    if (e.name === 'TimeoutError') return 'timed out';
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    return cause?.code ?? cause?.message ?? e.message;
  }
  return String(e);
}
