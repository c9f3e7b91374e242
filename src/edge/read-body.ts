import type { IncomingMessage } from 'node:http';
import { gunzip } from 'node:zlib';
import type { BodyEncoding, Refusal } from './request-checks.js';

/** 1 MiB: the most a body may be, as sent and once decompressed. */
export const MAX_BODY_BYTES = 1_048_576;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Step 12: reads the body within the limit and decompresses it. Reading stops
 * at the first byte over the limit, and decompression stops as soon as its
 * output passes it, so a gzip bomb costs about 1 MiB of memory.
 */
export async function readBody(req: IncomingMessage, encoding: BodyEncoding): Promise<{ bytes: Buffer } | Refusal> {
  const declared = Number(req.headers['content-length']);
  if (declared > MAX_BODY_BYTES) return tooLarge('as sent');
  const raw = await readLimited(req);
  if (raw === null) return tooLarge('as sent');
  if (encoding !== 'gzip') return { bytes: raw };
  const out = await gunzipLimited(raw);
  if (out === 'too_large') return tooLarge('once decompressed');
  if (out === 'corrupt') return { code: 'invalid_json', message: 'The body is not a valid gzip stream; compress it with gzip or drop Content-Encoding.' };
  return { bytes: out };
}

/** Step 13: the body as UTF-8 JSON. */
export function parseJsonBody(bytes: Buffer): { json: unknown } | Refusal {
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

function tooLarge(how: string): Refusal {
  return {
    code: 'payload_too_large',
    message: `The body is over 1 MiB (1,048,576 bytes) ${how}. Split the batch into smaller requests.`,
    // The rest of an oversized body is never read, so the connection cannot be reused.
    headers: { Connection: 'close' },
  };
}

/** The whole body, or null as soon as it passes the limit. */
function readLimited(req: IncomingMessage): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer): void => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        cleanup();
        req.pause();
        resolve(null);
        return;
      }
      chunks.push(c);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onError = (e: Error): void => {
      cleanup();
      reject(e);
    };
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

function gunzipLimited(buf: Buffer): Promise<Buffer | 'too_large' | 'corrupt'> {
  return new Promise((resolve) => {
    gunzip(buf, { maxOutputLength: MAX_BODY_BYTES }, (err, out) => {
      if (err === null) resolve(out);
      else resolve((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' ? 'too_large' : 'corrupt');
    });
  });
}
