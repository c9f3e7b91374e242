import { createHmac } from 'node:crypto';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutgoingBatch } from '../../stores/port-destinations.js';
import { AddressRefused, type DestinationReach, hostRefusal } from '../reach.js';
import { WebhookSender } from './sender.js';

/** As a server with INLET_DESTINATIONS_ALLOW_PRIVATE=true: the receivers here are on loopback. */
const OPEN: DestinationReach = { allowPrivate: true, ownDatabaseUrl: null, selfPort: null };
const CLOSED: DestinationReach = { ...OPEN, allowPrivate: false };

interface Seen {
  headers: http.IncomingHttpHeaders;
  url: string;
  body: string;
}

/** A receiver on a real socket: `answer` decides each answer; `hold` keeps a request unanswered. */
async function receiver(answer: (seen: Seen, res: http.ServerResponse) => void) {
  const seen: Seen[] = [];
  let connections = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const s = { headers: req.headers, url: req.url ?? '', body: Buffer.concat(chunks).toString('utf8') };
      seen.push(s);
      answer(s, res);
    });
  });
  server.on('connection', () => connections++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  open.push(server);
  return { seen, port, connections: () => connections };
}

const open: http.Server[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

const batch = (n: number): OutgoingBatch => ({
  destinationId: 'dst_1', projectId: 'prj_1', batchId: `b-${n}`, events: [],
  eventJson: [`{"n":${n},"s":"ü \\"q\\""}`, `{"n":${n + 1}}`],
});
const never = new AbortController().signal;

it('posts the batch as signed JSON with its idempotency key, over one kept-alive connection', async () => {
  const r = await receiver((_, res) => res.writeHead(204).end());
  const sender = new WebhookSender(`http://127.0.0.1:${r.port}/in?x=1`, 'whsec_test', OPEN, () => 1_795_000_000_000);
  expect(await sender.send(batch(1), never)).toEqual({ ok: true });
  expect(await sender.send(batch(3), never)).toEqual({ ok: true });
  await sender.close();
  expect(r.connections()).toBe(1);
  const [first] = r.seen;
  expect(first!.url).toBe('/in?x=1');
  expect(JSON.parse(first!.body)).toEqual({ destination_id: 'dst_1', batch_id: 'b-1', events: [{ n: 1, s: 'ü "q"' }, { n: 2 }] });
  expect(first!.headers).toMatchObject({ 'content-type': 'application/json', 'idempotency-key': 'b-1', 'user-agent': 'inlet-destination' });
  expect(Number(first!.headers['content-length'])).toBe(Buffer.byteLength(first!.body));
  // The documented check: HMAC-SHA256 of "<t>.<body>" under the secret.
  const v1 = createHmac('sha256', 'whsec_test').update(`1795000000.${first!.body}`).digest('hex');
  expect(first!.headers['inlet-signature']).toBe(`t=1795000000,v1=${v1}`);
});

it('sends the URL\'s user and password as Basic authorization, never in the request line', async () => {
  const r = await receiver((_, res) => res.writeHead(200).end());
  const sender = new WebhookSender(`http://hook%20user:p%40ss@127.0.0.1:${r.port}/in`, 's', OPEN);
  expect(await sender.send(batch(1), never)).toEqual({ ok: true });
  await sender.close();
  expect(r.seen[0]!.headers.authorization).toBe(`Basic ${Buffer.from('hook user:p@ss').toString('base64')}`);
  expect(r.seen[0]!.url).toBe('/in');
});

it('fails on any answer but 2xx, a redirect included (not followed), with Retry-After in seconds or as a date', async () => {
  const answers = [
    { status: 503, headers: { 'retry-after': '7' } },
    { status: 429, headers: { 'retry-after': new Date(1_795_000_030_000).toUTCString() } },
    { status: 302, headers: { location: '/elsewhere' } },
  ];
  const r = await receiver((_, res) => {
    const a = answers.shift()!;
    res.writeHead(a.status, a.headers).end('not read');
  });
  const sender = new WebhookSender(`http://127.0.0.1:${r.port}/in`, 's', OPEN, () => 1_795_000_000_000);
  expect(await sender.send(batch(1), never)).toEqual({ ok: false, error: 'The receiver answered 503.', retryAfterMs: 7000 });
  expect(await sender.send(batch(1), never)).toEqual({ ok: false, error: 'The receiver answered 429.', retryAfterMs: 30_000 });
  expect(await sender.send(batch(1), never)).toEqual({ ok: false, error: 'The receiver answered 302.', retryAfterMs: null });
  await sender.close();
  expect(r.seen.map((s) => s.url)).toEqual(['/in', '/in', '/in']);
});

it('an attempt asked to stop before it starts is failed as stopped, and its destroyed request ends nothing else (no unheard error)', async () => {
  const r = await receiver((_, res) => res.writeHead(200).end());
  const sender = new WebhookSender(`http://127.0.0.1:${r.port}/in`, 's', OPEN);
  const stopped = new AbortController();
  stopped.abort();
  const errors: unknown[] = [];
  const unheard = (e: unknown) => errors.push(e);
  process.on('uncaughtException', unheard);
  try {
    expect(await sender.send(batch(1), stopped.signal)).toEqual({ ok: false, error: 'Stopped.', retryAfterMs: null });
    // The destroyed request's error, if any, is emitted on a later turn: a send that works after it comes after that turn.
    expect(await sender.send(batch(1), never)).toEqual({ ok: true });
  } finally {
    process.off('uncaughtException', unheard);
    await sender.close();
  }
  expect(errors).toEqual([]);
});

it('fails an attempt nobody answers in time, and one stopped, at once and without the password', async () => {
  let arrived = (): void => undefined;
  const second = new Promise<void>((resolve) => (arrived = resolve));
  const r = await receiver(() => r.seen.length === 2 && arrived());
  const slow = new WebhookSender(`http://u:hunter22@127.0.0.1:${r.port}/in`, 's', OPEN, Date.now, 50);
  expect(await slow.send(batch(1), never)).toEqual({ ok: false, error: 'The receiver did not answer within 0.05 s.', retryAfterMs: null });
  const stop = new AbortController();
  const stopped = new WebhookSender(`http://127.0.0.1:${r.port}/in`, 's', OPEN).send(batch(1), stop.signal);
  await second;
  stop.abort();
  expect(await stopped).toEqual({ ok: false, error: 'Stopped.', retryAfterMs: null });
  await slow.close();
});

it('last_error tells open from closed ports: a closed port and a port that does not speak HTTP fail alike, without the password', async () => {
  const r = await receiver((_, res) => res.writeHead(204).end());
  const port = r.port;
  open.pop()!.close();
  const closed = await new WebhookSender(`http://u:hunter22@127.0.0.1:${port}/in`, 's', OPEN).send(batch(1), never);
  expect(closed).toEqual({ ok: false, error: 'The connection to the receiver failed.', retryAfterMs: null });
  const sockets: net.Socket[] = [];
  const notHttp = net.createServer((socket) => {
    sockets.push(socket);
    socket.end('SSH-2.0-OpenSSH_9.6\r\n');
  });
  await new Promise<void>((done) => notHttp.listen(0, '127.0.0.1', done));
  try {
    const other = await new WebhookSender(`http://127.0.0.1:${(notHttp.address() as AddressInfo).port}/in`, 's', OPEN).send(batch(1), never);
    expect(other).toEqual(closed);
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((done) => notHttp.close(done));
  }
});

describe('destinations reach inside the network', () => {
  const answering = async () => receiver((_, res) => res.writeHead(204).end());

  it('an address literal that may not be reached is refused without a connection: loopback, and loopback as an IPv4-mapped address', async () => {
    const r = await answering();
    for (const host of ['127.0.0.1', '[::ffff:127.0.0.1]']) {
      const sender = new WebhookSender(`http://${host}:${r.port}/in`, 's', CLOSED);
      const outcome = await sender.send(batch(1), never);
      await sender.close();
      expect(outcome, host).toEqual({ ok: false, error: expect.stringMatching(/^Refused: .* is, or resolves to, an address destinations may not reach/), retryAfterMs: null });
    }
    expect(r.connections()).toBe(0);
  });

  it('a name is judged on the address it resolves to at each connection: a name that turned to loopback after the check at creation is refused, and nothing arrives', async () => {
    const r = await answering();
    let answer = '93.184.215.14';
    const reach: DestinationReach = { ...CLOSED, resolve: async () => [{ address: answer, family: 4 }] };
    expect(await hostRefusal('receiver.test', r.port, reach)).toBeNull();
    answer = '127.0.0.1';
    const sender = new WebhookSender(`http://receiver.test:${r.port}/in`, 's', reach);
    const outcome = await sender.send(batch(1), never);
    await sender.close();
    expect(outcome).toEqual({ ok: false, error: new AddressRefused('receiver.test').message, retryAfterMs: null });
    expect(r.connections()).toBe(0);

    // The same name, with private addresses allowed, reaches the receiver through that lookup: it is the one connected with.
    const allowed = new WebhookSender(`http://receiver.test:${r.port}/in`, 's', { ...reach, allowPrivate: true });
    expect(await allowed.send(batch(1), never)).toEqual({ ok: true });
    await allowed.close();
    expect(r.seen).toHaveLength(1);
  });
});
