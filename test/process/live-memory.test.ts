import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { type Socket, connect } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LIVE_BUFFER_BYTES } from '../../src/edge/connection-limits.js';
import { type LiveServer, startLiveServer } from '../helpers/live-server.js';
import { runCli } from '../helpers/cli.js';
import { rawRequest } from '../helpers/raw-http.js';

/**
 * A live-events client that never reads grows server memory without bound:
 * 10 paused streams took a server from 148 to 1,669 MiB in 25 s of 500-item
 * batches. Each stream now holds at most LIVE_BUFFER_BYTES unsent and is
 * ended once past it, while a stream that reads keeps going.
 */

const STALLED = 10;
const ITEMS = 500;
/** What the server may grow by while the stalled streams are open (RSS). */
const ALLOWED_GROWTH_MIB = 150;
const PASSWORD = 'correct horse battery staple';

let live: LiveServer;
let port: number;
beforeAll(async () => {
  live = await startLiveServer({
    INLET_LIMIT_BURST: '0', INLET_LIMIT_SUSTAINED: '0', INLET_LIMIT_KEY_RPS: '0',
    INLET_LIVE_STREAMS_PER_SESSION: String(STALLED + 1),
  });
  port = Number(new URL(live.url).port);
  const made = await runCli(['user', 'create', '--email', 'dev@acme.test', '--admin', '--password-stdin'], live.env, PASSWORD);
  if (made.code !== 0) throw new Error(made.stderr);
});
afterAll(async () => {
  await live?.stop();
});

const pid = () => live.server.proc.pid!;
const statusKb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid()}/status`, 'utf8'))![1]);
const sysMax = (name: string) => Number(readFileSync(`/proc/sys/net/ipv4/${name}`, 'utf8').trim().split(/\s+/)[2]);

/** How many of these client connections the server process still holds open (the kernel's table of IPv4 TCP sockets). */
function heldByServer(clientPorts: Set<number>): number {
  let n = 0;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const [, local, remote, , , , , , , inode] = line.trim().split(/\s+/);
    // Inode 0: closed by the process, its unsent bytes left to the kernel (an orphan).
    if (local === undefined || remote === undefined || inode === '0') continue;
    if (parseInt(local.split(':')[1]!, 16) === port && clientPorts.has(parseInt(remote.split(':')[1]!, 16))) n++;
  }
  return n;
}

/** One request on its own connection, answered and closed before it returns. */
async function once(text: string) {
  const c = rawRequest(port, text);
  const answer = await c.answer;
  await c.closed;
  return answer;
}

function batch(round: number): string {
  const items = Array.from({ length: ITEMS }, (_, i) => ({ event: 'Order placed', distinct_id: `cust_${i % 50}`, properties: { round, i } }));
  const body = JSON.stringify({ items });
  return `POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${live.key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

/** A live view that reads its header and then nothing more. */
function stalledView(cookie: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let head = '';
    const onData = (d: Buffer) => {
      head += d.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      socket.pause();
      if (head.startsWith('HTTP/1.1 200')) resolve(socket);
      else reject(new Error(head.slice(0, 200)));
    };
    socket.on('data', onData);
    socket.on('error', () => undefined);
    socket.write(`GET /console/sources/${live.sourceId}/live HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${cookie}\r\n\r\n`);
  });
}

/** A live view that reads everything: it must outlast the stalled ones. */
function readingView(cookie: string) {
  const events: number[] = [];
  let ended = false;
  const started = new Promise<void>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: `/console/sources/${live.sourceId}/live`, agent: false, headers: { cookie } }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        resolve();
        for (let at = buf.indexOf('\n\n'); at !== -1; at = buf.indexOf('\n\n')) {
          if (buf.startsWith('event: request')) events.push(Buffer.byteLength(buf.slice(0, at + 2)));
          buf = buf.slice(at + 2);
        }
      });
      res.on('close', () => (ended = true));
    });
    req.on('error', reject);
    req.end();
  });
  return { started, events, ended: () => ended };
}

it('a live-events client that never reads grows server memory without bound: stalled streams are ended, memory stays within bounds, a reading stream goes on', async () => {
  const login = await once(
    `POST /console/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${`email=dev%40acme.test&password=${encodeURIComponent(PASSWORD)}`.length}\r\nConnection: close\r\n\r\nemail=dev%40acme.test&password=${encodeURIComponent(PASSWORD)}`,
  );
  expect(login.status).toBe(303);
  const cookie = login.headers.get('set-cookie')!.split(';')[0]!;

  const reader = readingView(cookie);
  await reader.started;
  // Warm-up: the first batch sizes one event, and the server settles before its memory is read.
  expect((await once(batch(0))).status).toBe(202);
  while (reader.events.length === 0) await new Promise((r) => setImmediate(r));
  const eventBytes = reader.events[0]!;
  const startKb = statusKb('VmRSS');

  const stalled = await Promise.all(Array.from({ length: STALLED }, () => stalledView(cookie)));
  const ports = new Set(stalled.map((s) => s.localPort!));
  expect(heldByServer(ports)).toBe(STALLED);
  // The most a stalled stream can absorb before its server-side buffer fills: both kernels'
  // socket buffers at their largest, and the buffer itself. Past it, an unbounded server grows.
  const rounds = Math.ceil((sysMax('tcp_rmem') + sysMax('tcp_wmem') + LIVE_BUFFER_BYTES) / eventBytes) + 10;
  let sent = 0;
  while (sent < rounds && heldByServer(ports) > 0) {
    sent++;
    expect((await once(batch(sent))).status).toBe(202);
  }
  const peakKb = statusKb('VmHWM');

  expect(heldByServer(ports), `stalled streams still open after ${sent} batches of ${eventBytes} bytes of lines each`).toBe(0);
  expect((peakKb - startKb) / 1024).toBeLessThan(ALLOWED_GROWTH_MIB);
  // The server ended them, not the client: each is closed once read again.
  await Promise.all(stalled.map((s) => new Promise((r) => (s.destroyed ? r(null) : (s.once('close', r), s.resume())))));
  expect(reader.ended()).toBe(false);
  expect(reader.events.length).toBeGreaterThan(sent);
}, 300_000);
