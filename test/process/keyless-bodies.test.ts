/**
 * Bodies with no key fill the whole reading budget (regression): four client
 * addresses, 16 connections each, sent 1 MiB bodies to /v1/batch with no key
 * in a header and held them open; each address had a key's share (16 MiB) of
 * the 64 MiB being read, four shares were all of it, and every request with a
 * valid Bearer key got 503. Now bodies whose key is inside them are read in a
 * pool of their own (an eighth of the budget, 1 MiB per address by default),
 * and bodies with a key in a header keep the rest.
 */
import { readFileSync } from 'node:fs';
import { afterAll, expect, it, vi } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { freePort, provision, readingBytes, startServer, stopServer } from '../helpers/process.js';
import { type RawAnswer, type RawConnection, rawRequest } from '../helpers/raw-http.js';

const tmp = tempDir('inlet-keyless-bodies-');
afterAll(() => tmp.remove());

const MIB = 1_048_576;
/** Client addresses (127.0.0.2 and on: all of 127/8 is loopback on Linux), and connections from each. */
const ADDRESSES = 10;
const PER_ADDRESS = 8;

function rss(pid: number): number {
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
}

it('bodies with no key fill the whole reading budget: 80 slow keyless 1 MiB bodies from 10 addresses hold only the keyless pool, and a Bearer batch is answered 202 meanwhile', async () => {
  const { key } = await provision({}, tmp.dir);
  const metricsPort = await freePort();
  // The reading settings are the defaults: 64 MiB, of which 8 MiB for keyless bodies, 1 MiB per address.
  const server = await startServer(['--data-dir', tmp.dir], { INLET_METRICS_PORT: String(metricsPort) });
  const pid = server.proc.pid!;
  const port = Number(new URL(server.url).port);
  const connections: RawConnection[] = [];
  try {
    const warm = await rawRequest(port, bearerBatch(key.key, 'warm')).answer;
    expect(warm.status, warm.body).toBe(202);
    const before = rss(pid);

    // All but the last byte of a 1 MiB body, with no key anywhere yet (it would be in the body).
    const head = `POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${MIB}\r\n\r\n{"batch":[`;
    const rest = Buffer.alloc(MIB - 1 - Buffer.byteLength('{"batch":['), 0x20);
    const answers: RawAnswer[] = [];
    for (let a = 0; a < ADDRESSES; a++) {
      for (let i = 0; i < PER_ADDRESS; i++) {
        const c = rawRequest(port, head, `127.0.0.${a + 2}`);
        c.socket.on('error', () => undefined);
        c.socket.write(rest, () => undefined);
        c.answer.then((x) => answers.push(x), () => undefined);
        connections.push(c);
      }
    }
    // Every body is either answered or held, being read: wait until the server has seen them all.
    const total = ADDRESSES * PER_ADDRESS;
    let held = 0;
    await vi.waitFor(
      async () => {
        held = (await readingBytes(metricsPort)) / MIB;
        expect(answers.length + held).toBe(total);
      },
      { timeout: 60_000, interval: 50 },
    );
    // Meanwhile a batch with its key in a header is read and stored, on either intake.
    const served = await rawRequest(port, bearerBatch(key.key, 'served')).answer;
    expect(served.status, served.body).toBe(202);
    expect(new Set(answers.map((a) => `${a.status} ${a.json?.error?.code} ${a.headers.get('retry-after')} ${a.headers.get('connection')}`))).toEqual(
      new Set(['503 collection_unavailable 5 close']),
    );
    const messages = answers.map((a) => a.json.error.message as string);
    expect(messages.some((m) => m.startsWith('This client address already has as many request bodies being read'))).toBe(true);
    expect(messages.some((m) => m.startsWith('This server is reading as many request bodies with the key in the body'))).toBe(true);
    // The keyless pool holds them: eight addresses with one body each.
    expect(held).toBe(8);

    const segment = JSON.stringify({ batch: [{ type: 'track', event: 'served', userId: 'u', messageId: 'm-served' }] });
    const basic = Buffer.from(`${key.key}:`).toString('base64');
    const viaSegment = await rawRequest(
      port,
      `POST /v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Basic ${basic}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(segment)}\r\n\r\n${segment}`,
    ).answer;
    expect(viaSegment.status, viaSegment.body).toBe(200);

    const now = rss(pid);
    expect(now - before, `VmRSS ${now >> 20} MiB, ${before >> 20} MiB before`).toBeLessThan(150 * MIB);
    // Still open: none of the held bodies was given up on while the others were served.
    expect(connections.filter((c) => !c.socket.destroyed).length).toBeGreaterThanOrEqual(held);
  } finally {
    for (const c of connections) c.socket.destroy();
    await stopServer(server);
  }
});

function bearerBatch(key: string, event: string): string {
  const body = JSON.stringify({ items: [{ event, distinct_id: 'u' }] });
  return `POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}
