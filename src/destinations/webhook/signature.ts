import { createHmac, randomBytes } from 'node:crypto';

/**
 * The `Inlet-Signature` header of a webhook request: `t=<unix seconds>,v1=<hex
 * HMAC-SHA256 of "<t>.<body>" under the destination's secret>`, one v1 per
 * secret that signs (two for a day after a rotation). The time is in the
 * signed text so that a receiver can refuse an old request replayed.
 */
export function signature(secrets: string | readonly string[], body: string | Buffer, unixSeconds: number): string {
  const v1s = (typeof secrets === 'string' ? [secrets] : secrets).map((s) => `,v1=${createHmac('sha256', s).update(`${unixSeconds}.`).update(body).digest('hex')}`);
  return `t=${unixSeconds}${v1s.join('')}`;
}

const PREFIX = 'whsec_';

/** A new signing secret as Standard Webhooks libraries read one: whsec_ and 32 random bytes in base64. */
export const newSecret = (): string => `${PREFIX}${randomBytes(32).toString('base64')}`;

/**
 * The key a secret signs `webhook-signature` with: the bytes its text after
 * whsec_ encodes in base64, as the standardwebhooks and svix libraries
 * decode it. Secrets made before (whsec_ and 32 letters and digits) are
 * base64 text too: they decode to 24 bytes, so those receivers can use the
 * libraries with the secret they already hold.
 */
export const keyOf = (secret: string): Buffer => Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, 'base64');

/**
 * The `webhook-signature` header (Standard Webhooks): `v1,<base64 HMAC-SHA256
 * of "<id>.<timestamp>.<body>">` for each key, space-separated (two while a
 * rotated secret still signs).
 */
export function standardSignature(secrets: readonly string[], id: string, unixSeconds: number, body: string | Buffer): string {
  return secrets
    .map((s) => `v1,${createHmac('sha256', keyOf(s)).update(`${id}.${unixSeconds}.`).update(body).digest('base64')}`)
    .join(' ');
}
