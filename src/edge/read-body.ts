import type { IncomingMessage } from 'node:http';
import { gunzip } from 'node:zlib';
import { BROKEN_GZIP, MAX_BODY_BYTES, bodyTooLarge } from '../pipeline/parse-body.js';
import type { BudgetSpent, Reservation } from './read-budget.js';
import type { BodyEncoding } from '../intakes/intake.js';
import type { Refusal } from './request-checks.js';

export { MAX_BODY_BYTES };

/** The connection closed (or failed) before the whole body arrived: there is no one to answer. */
export interface ClientGone {
  gone: true;
}

/**
 * The size check and the room to read the body: reserves room for the body (its
 * declared length, or as it arrives when chunked), reads it within the limit
 * and decompresses it.
 * Reading stops at the first byte over the limit or over the reservation,
 * and decompression stops as soon as its output passes the limit, so a gzip
 * bomb costs about 1 MiB of memory. The reservation is given back once the
 * body is read and decompressed: from then on Admission weighs it.
 */
export async function readBody(
  req: IncomingMessage,
  encoding: BodyEncoding,
  reserve: (bytes: number) => Reservation | BudgetSpent,
): Promise<{ bytes: Buffer } | Refusal | ClientGone> {
  const raw = await readHeld(req, reserve);
  if (!('release' in raw)) return raw;
  // A body waiting to be decompressed still holds its reservation: the raw bytes are in hand until then.
  try {
    if (encoding !== 'gzip') return { bytes: raw.bytes };
    const out = await gunzipLimited(raw.bytes);
    if (out === 'too_large') return bodyTooLarge('once decompressed');
    if (out === 'corrupt') return BROKEN_GZIP;
    return { bytes: out };
  } finally {
    raw.release();
  }
}

/**
 * The body as sent, not decompressed, within the size check and the room to
 * read it (as readBody), its reservation held until the caller's release():
 * a body whose key is inside it keeps its room in the keyless pool until a
 * check thread has found the key (foreign-intake.ts).
 */
export async function readHeld(
  req: IncomingMessage,
  reserve: (bytes: number) => Reservation | BudgetSpent,
): Promise<{ bytes: Buffer; release: () => void } | Refusal | ClientGone> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_BODY_BYTES) return bodyTooLarge('as sent');
  const reservation = reserve(Number.isSafeInteger(declared) ? declared : 0);
  if (typeof reservation === 'string') return busy(reservation);
  const raw = await readLimited(req, declared, reservation);
  if (Buffer.isBuffer(raw)) return { bytes: raw, release: () => reservation.release() };
  reservation.release();
  if (raw === 'too_large') return bodyTooLarge('as sent');
  return typeof raw === 'string' ? busy(raw) : raw;
}

/** Why a body was refused before it was read, by the budget it would have passed. */
const BUSY: Record<BudgetSpent, string> = {
  project: 'This project already has as many request bodies being read as one project may, all its keys together; nothing was stored. Resend after Retry-After seconds, or send fewer requests at once.',
  server: 'This server is reading as many request bodies as it can hold; nothing was stored. Resend after Retry-After seconds.',
  address:
    'This client address already has as many request bodies being read as one address may while the key is in the body; nothing was stored. Resend after Retry-After seconds, or send the key in the Authorization header (HTTP Basic or Bearer).',
  keyless:
    'This server is reading as many request bodies with the key in the body as it holds at once; nothing was stored. Resend after Retry-After seconds, or send the key in the Authorization header (HTTP Basic or Bearer), which is never held up by them.',
};

function busy(spent: BudgetSpent): Refusal {
  return {
    code: 'collection_unavailable',
    message: BUSY[spent],
    // Refused before (or while) its body is read: the rest is never read, so the connection cannot be reused.
    headers: { Connection: 'close' },
  };
}

/**
 * The whole body; 'too_large' or the budget spent as soon as it passes the
 * limit or its reservation; gone when the connection ends first. A client
 * that trickles its body holds its reservation until the server's request
 * timeout closes the connection.
 */
function readLimited(req: IncomingMessage, declared: number, reservation: Reservation): Promise<Buffer | 'too_large' | BudgetSpent | ClientGone> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let held = declared;
    const stop = (why: 'too_large' | BudgetSpent): void => {
      cleanup();
      req.pause();
      resolve(why);
    };
    const onData = (c: Buffer): void => {
      size += c.length;
      if (size > MAX_BODY_BYTES) return stop('too_large');
      if (size > held) {
        const over = reservation.grow(size - held);
        if (over !== null) return stop(over);
        held = size;
      }
      chunks.push(c);
    };
    const onEnd = (): void => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    // An error or a close before the end is the connection going away (a
    // reset, a client that gave up, the request timeout): not a failure of ours.
    const onGone = (): void => {
      cleanup();
      resolve({ gone: true });
    };
    const cleanup = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onGone);
      req.off('close', onGone);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onGone);
    req.on('close', onGone);
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
