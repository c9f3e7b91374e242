import http from 'node:http';
import https from 'node:https';
import type { DeliverySender, OutgoingBatch, SendOutcome } from '../../stores/port-destinations.js';
import { AddressRefused, type DestinationReach, guardedLookup, literalRefusal } from '../reach.js';
import { signature, standardSignature } from './signature.js';

/** Why a destination whose receiver answered 410 is paused: the receiver says it wants no more. */
export const GONE = 'The receiver answered 410 (Gone): delivery is paused; resume the destination once the receiver takes events again.';

/** A destination's signing secrets: its secret, and the one it replaced while that still signs (until `previousUntil`, epoch ms). */
export interface WebhookSecrets {
  secret: string;
  previous: string | null;
  previousUntil: number;
}

/** The secrets that sign at `now`: the current one first. */
export const signingSecrets = (s: WebhookSecrets, now: number): string[] => (s.previous !== null && now < s.previousUntil ? [s.secret, s.previous] : [s.secret]);

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

/**
 * The body of a webhook request, as UTF-8 bytes: the events are already JSON
 * (domain/delivery/batch.ts), each written once into one buffer, which is
 * signed and sent as it is. Joined as one string first, the body was
 * flattened and encoded twice (to sign it and to send it): a third of the
 * cost of a batch.
 */
export function webhookBody(b: Pick<OutgoingBatch, 'destinationId' | 'batchId' | 'eventJson'>): Buffer {
  const head = `{"destination_id":${JSON.stringify(b.destinationId)},"batch_id":${JSON.stringify(b.batchId)},"events":[`;
  // A UTF-16 unit takes at most 3 bytes in UTF-8 (a pair of them, 4).
  let room = (head.length + 2) * 3;
  for (const e of b.eventJson) room += e.length * 3 + 1;
  const out = Buffer.allocUnsafe(room);
  let at = out.write(head, 0, 'utf8');
  b.eventJson.forEach((e, i) => {
    if (i > 0) out[at++] = 0x2c;
    at += out.write(e, at, 'utf8');
  });
  at += out.write(']}', at, 'utf8');
  return out.subarray(0, at);
}

/**
 * Sends batches as signed JSON POSTs, over one kept-alive connection per
 * destination (node:http: fetch cost twice as much per batch, in its body
 * streams and headers). A 2xx delivers; any other answer (a redirect
 * included: it is not followed), a network failure or no answer in 10 s
 * fails the attempt, with an error that names the status, or says the
 * connection was refused (the address guard, reach.ts: checked on the
 * address each new connection resolves to) or failed (never which way: that
 * would tell an open port from a closed one), never the body or the password.
 */
export class WebhookSender implements DeliverySender {
  private readonly target: URL;
  private readonly authorization: string | null;
  private readonly agent: http.Agent;
  private readonly request: typeof http.request;
  private readonly port: number;
  private readonly lookup: ReturnType<typeof guardedLookup>;
  private readonly secrets: WebhookSecrets;

  constructor(
    private readonly url: string,
    secrets: WebhookSecrets | string,
    private readonly reach: DestinationReach,
    private readonly clock: () => number = Date.now,
    private readonly timeoutMs = WEBHOOK_TIMEOUT_MS,
  ) {
    this.secrets = typeof secrets === 'string' ? { secret: secrets, previous: null, previousUntil: 0 } : secrets;
    const u = new URL(url);
    this.authorization =
      u.username === '' && u.password === ''
        ? null
        : `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`;
    u.username = '';
    u.password = '';
    this.target = u;
    // Batches of one destination go one at a time: one connection is all it uses.
    const via = u.protocol === 'https:' ? https : http;
    this.agent = new via.Agent({ keepAlive: true, maxSockets: 1 });
    this.request = via.request;
    this.port = u.port !== '' ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
    this.lookup = guardedLookup(reach, this.port);
  }

  send(batch: OutgoingBatch, signal: AbortSignal): Promise<SendOutcome> {
    // Node resolves no IP literal, so the lookup never sees one: it is judged here.
    const refused = literalRefusal(this.target.hostname, this.port, this.reach);
    if (refused !== null) return Promise.resolve({ ok: false, error: refused.message, retryAfterMs: null });
    const body = webhookBody(batch);
    const now = this.clock();
    const seconds = Math.floor(now / 1000);
    const secrets = signingSecrets(this.secrets, now);
    const headers: http.OutgoingHttpHeaders = {
      'content-type': 'application/json',
      'content-length': body.length,
      'idempotency-key': batch.batchId,
      'webhook-id': batch.batchId,
      'webhook-timestamp': String(seconds),
      'webhook-signature': standardSignature(secrets, batch.batchId, seconds, body),
      'inlet-signature': signature(secrets, body, seconds),
      'user-agent': 'inlet-destination',
    };
    if (this.authorization !== null) headers.authorization = this.authorization;
    return new Promise<SendOutcome>((resolve) => {
      let settled = false;
      const settle = (o: SendOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        resolve(o);
      };
      const req = this.request(this.target, { method: 'POST', headers, agent: this.agent, lookup: this.lookup }, (res) => {
        const status = res.statusCode ?? 0;
        const retryAfter = res.headers['retry-after'];
        // The answer's body is not needed; reading it to its end frees the connection for the next batch.
        res.resume();
        res.on('end', () => {
          if (status >= 200 && status < 300) settle({ ok: true });
          else if (status === 410) settle({ ok: false, error: GONE, retryAfterMs: null, pause: true });
          else settle({ ok: false, error: `The receiver answered ${status}.`, retryAfterMs: parseRetryAfter(typeof retryAfter === 'string' ? retryAfter : null, this.clock()) });
        });
        res.on('error', (e) => settle(this.unreachable(e)));
      });
      // Listened to before anything may destroy the request (a stop already asked for, below): a
      // destroyed request emits its error ("socket hang up"), which unheard would end the thread.
      req.on('error', (e) => settle(this.unreachable(e)));
      const timer = setTimeout(() => {
        settle({ ok: false, error: `The receiver did not answer within ${this.timeoutMs / 1000} s.`, retryAfterMs: null });
        req.destroy();
      }, this.timeoutMs);
      const onAbort = () => {
        settle({ ok: false, error: 'Stopped.', retryAfterMs: null });
        req.destroy();
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      req.end(body);
    });
  }

  private unreachable(e: Error): SendOutcome {
    if (e instanceof AddressRefused) return { ok: false, error: e.message, retryAfterMs: null };
    return { ok: false, error: 'The connection to the receiver failed.', retryAfterMs: null };
  }

  async close(): Promise<void> {
    this.agent.destroy();
  }
}
