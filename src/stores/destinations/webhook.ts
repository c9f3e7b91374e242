import { type DeliverySender, type OutgoingBatch, type SendOutcome, scrub } from '../port-destinations.js';
import { signature } from './signature.js';

/** A receiver that has not answered in this long has failed the attempt. */
export const WEBHOOK_TIMEOUT_MS = 10_000;

/** A Retry-After header (seconds, or an HTTP date) as ms from `now`; null when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number): number | null {
  if (value === null) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** The body of a webhook request, as JSON text: the events are already JSON (domain/delivery/batch.ts). */
export function webhookBody(b: OutgoingBatch): string {
  return `{"destination_id":${JSON.stringify(b.destinationId)},"batch_id":${JSON.stringify(b.batchId)},"events":[${b.eventJson.join(',')}]}`;
}

/**
 * Sends batches as signed JSON POSTs. A 2xx delivers; any other answer, a
 * network failure or no answer in 10 s fails the attempt, with an error that
 * names the status or the failure (never the body, never the URL's password).
 */
export class WebhookSender implements DeliverySender {
  /** The URL without its user and password: fetch refuses a URL that holds them, and they go in Authorization. */
  private readonly target: string;
  private readonly authorization: string | null;

  constructor(
    private readonly url: string,
    private readonly secret: string,
    private readonly clock: () => number = Date.now,
  ) {
    const u = new URL(url);
    this.authorization =
      u.username === '' && u.password === ''
        ? null
        : `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`;
    u.username = '';
    u.password = '';
    this.target = u.toString();
  }

  async send(batch: OutgoingBatch, signal: AbortSignal): Promise<SendOutcome> {
    const body = webhookBody(batch);
    const now = this.clock();
    const timeout = AbortSignal.timeout(WEBHOOK_TIMEOUT_MS);
    try {
      const res = await fetch(this.target, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': batch.batchId,
          'inlet-signature': signature(this.secret, body, Math.floor(now / 1000)),
          'user-agent': 'inlet-destination',
          ...(this.authorization === null ? {} : { authorization: this.authorization }),
        },
        body,
        signal: AbortSignal.any([signal, timeout]),
        redirect: 'manual',
      });
      // The answer's body is not needed; reading it to its end frees the connection for the next batch.
      await res.arrayBuffer().catch(() => undefined);
      if (res.status >= 200 && res.status < 300) return { ok: true };
      return { ok: false, error: `The receiver answered ${res.status}.`, retryAfterMs: parseRetryAfter(res.headers.get('retry-after'), this.clock()) };
    } catch (e) {
      if (timeout.aborted) return { ok: false, error: `The receiver did not answer within ${WEBHOOK_TIMEOUT_MS / 1000} s.`, retryAfterMs: null };
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (e as Error).message;
      return { ok: false, error: scrub(`The receiver could not be reached (${why}).`, this.url), retryAfterMs: null };
    }
  }

  async close(): Promise<void> {}
}
