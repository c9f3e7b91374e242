import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { afterEach, expect, it } from 'vitest';
import type { DestinationReach, OutgoingBatch } from '../../stores/port-destinations.js';
import { GONE, WebhookSender } from './sender.js';
import { keyOf, newSecret, standardSignature } from './signature.js';

const OPEN: DestinationReach = { allowPrivate: true, ownDatabaseUrl: null, selfPort: null };
const never = new AbortController().signal;

interface Seen {
  headers: Record<string, string>;
  body: string;
}

/** A receiver on a real socket answering each request with the next status of `statuses` (204 after them). */
async function receiver(statuses: number[] = []) {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8') });
      const status = statuses.shift() ?? 204;
      res.writeHead(status, status === 301 ? { location: '/elsewhere' } : {}).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  servers.push(server);
  return { seen, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/in` };
}

const servers: http.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

const batch = (id: string): OutgoingBatch => ({ destinationId: 'dst_1', projectId: 'prj_1', batchId: id, events: [], eventJson: ['{"n":1,"s":"ü"}'] });

/** Both libraries, unchanged, as a receiver would call them; each throws when the request is not signed by `secret`. */
function verifyWithBoth(secret: string, s: Seen): void {
  expect(new StandardWebhook(secret).verify(s.body, s.headers)).toMatchObject({ batch_id: s.headers['webhook-id'] });
  expect(new SvixWebhook(secret).verify(s.body, s.headers)).toMatchObject({ batch_id: s.headers['webhook-id'] });
}

it('new secrets are whsec_ and 32 random bytes in base64, and requests verify with standardwebhooks and svix unchanged', async () => {
  const secret = newSecret();
  expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  expect(keyOf(secret)).toHaveLength(32);
  const r = await receiver();
  const sender = new WebhookSender(r.url, secret, OPEN);
  expect(await sender.send(batch('b-1'), never)).toEqual({ ok: true });
  await sender.close();
  const [s] = r.seen;
  expect(s!.headers['webhook-id']).toBe('b-1');
  expect(s!.headers['idempotency-key']).toBe('b-1');
  expect(s!.headers['inlet-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
  expect(s!.headers['webhook-timestamp']).toBe(s!.headers['inlet-signature']!.slice(2, s!.headers['inlet-signature']!.indexOf(',')));
  verifyWithBoth(secret, s!);
  // Another secret, or the body changed, is refused by both.
  expect(() => new StandardWebhook(newSecret()).verify(s!.body, s!.headers)).toThrow();
  expect(() => new SvixWebhook(secret).verify(`${s!.body} `, s!.headers)).toThrow();
});

it('a secret made before (whsec_ and 32 letters and digits) verifies with the libraries too', async () => {
  const old = 'whsec_k3Tq9ZpL0aXv7BcR2mN8yW4sH6dF1gJe';
  const r = await receiver();
  const sender = new WebhookSender(r.url, old, OPEN);
  expect(await sender.send(batch('b-2'), never)).toEqual({ ok: true });
  await sender.close();
  verifyWithBoth(old, r.seen[0]!);
});

it('the signature is computed as documented: v1, then base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" under the decoded secret', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  const expected = new StandardWebhook(secret).sign('msg_p5jXN8AQM9LWM0D4loKWxJek', new Date(1_614_265_330_000), '{"test": 2432232314}');
  expect(standardSignature([secret], 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1_614_265_330, '{"test": 2432232314}')).toBe(expected);
});

it('a batch sent again carries the same webhook-id, a new timestamp, and verifies each time', async () => {
  const secret = newSecret();
  const r = await receiver([503]);
  let now = Date.now();
  const sender = new WebhookSender(r.url, secret, OPEN, () => now);
  expect(await sender.send(batch('b-3'), never)).toMatchObject({ ok: false, error: 'The receiver answered 503.' });
  now += 2000;
  expect(await sender.send(batch('b-3'), never)).toEqual({ ok: true });
  await sender.close();
  expect(r.seen.map((s) => s.headers['webhook-id'])).toEqual(['b-3', 'b-3']);
  expect(Number(r.seen[1]!.headers['webhook-timestamp']) - Number(r.seen[0]!.headers['webhook-timestamp'])).toBe(2);
  for (const s of r.seen) verifyWithBoth(secret, s);
});

it('after a rotation both secrets sign (space-separated) until the old one runs out, then only the new one', async () => {
  const [previous, secret] = [newSecret(), newSecret()];
  const r = await receiver();
  let now = Date.now();
  const until = now + 24 * 3_600_000;
  const sender = new WebhookSender(r.url, { secret, previous, previousUntil: until }, OPEN, () => now);
  expect(await sender.send(batch('b-4'), never)).toEqual({ ok: true });
  now = until - 1;
  expect(await sender.send(batch('b-5'), never)).toEqual({ ok: true });
  now = until;
  expect(await sender.send(batch('b-6'), never)).toEqual({ ok: true });
  await sender.close();
  const [during, last, after] = r.seen;
  expect(during!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
  expect(during!.headers['inlet-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
  // A receiver still holding the previous secret verifies, as one that took the new one (the libraries check the time with the wall clock).
  verifyWithBoth(previous, during!);
  verifyWithBoth(secret, during!);
  expect(last!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
  expect(after!.headers['webhook-signature']!.split(' ')).toHaveLength(1);
  expect(after!.headers['webhook-signature']).toBe(standardSignature([secret], 'b-6', Number(after!.headers['webhook-timestamp']), after!.body));
});

it('a 410 asks for the destination to be paused with its reason; a 301 is a failure, not followed', async () => {
  const r = await receiver([301, 410]);
  const sender = new WebhookSender(r.url, newSecret(), OPEN);
  expect(await sender.send(batch('b-7'), never)).toEqual({ ok: false, error: 'The receiver answered 301.', retryAfterMs: null });
  expect(await sender.send(batch('b-7'), never)).toEqual({ ok: false, error: GONE, retryAfterMs: null, pause: true });
  await sender.close();
  expect(r.seen).toHaveLength(2);
});

/** A function of docs/destinations.md's code blocks, run as the page gives it (its import of node:crypto supplied). */
function documented(name: string): (...args: unknown[]) => boolean {
  const page = readFileSync(new URL('../../../docs/destinations.md', import.meta.url), 'utf8');
  const block = [...page.matchAll(/```js\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes(`function ${name}(`));
  if (block === undefined) throw new Error(`docs/destinations.md has no function ${name}`);
  const code = block.replace(/^import .*$/gm, '');
  return new Function('createHmac', 'timingSafeEqual', `${code}\nreturn ${name};`)(createHmac, timingSafeEqual) as (...args: unknown[]) => boolean;
}

it('the checks docs/destinations.md gives by hand accept what Inlet sends, under either secret during a rotation, and refuse a changed body', async () => {
  const [previous, secret] = [newSecret(), newSecret()];
  const r = await receiver();
  const sender = new WebhookSender(r.url, { secret, previous, previousUntil: Date.now() + 60_000 }, OPEN);
  expect(await sender.send(batch('b-8'), never)).toEqual({ ok: true });
  await sender.close();
  const [s] = r.seen;
  const signedByInlet = documented('signedByInlet');
  const inletSigned = documented('inletSigned');
  for (const key of [secret, previous]) {
    expect(signedByInlet(key, s!.headers, s!.body)).toBe(true);
    expect(inletSigned(key, s!.headers['inlet-signature'], s!.body)).toBe(true);
  }
  expect(signedByInlet(newSecret(), s!.headers, s!.body)).toBe(false);
  expect(signedByInlet(secret, s!.headers, `${s!.body} `)).toBe(false);
  expect(inletSigned(secret, s!.headers['inlet-signature'], `${s!.body} `)).toBe(false);
});
