import { createHmac } from 'node:crypto';

/**
 * The `Inlet-Signature` header of a webhook request: `t=<unix seconds>,v1=<hex
 * HMAC-SHA256 of "<t>.<body>" under the destination's secret>`. The time is
 * in the signed text so that a receiver can refuse an old request replayed.
 */
export function signature(secret: string, body: string | Buffer, unixSeconds: number): string {
  const v1 = createHmac('sha256', secret).update(`${unixSeconds}.`).update(body).digest('hex');
  return `t=${unixSeconds},v1=${v1}`;
}
