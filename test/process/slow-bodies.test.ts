/**
 * Bodies being read are not bounded (regression): about 2,000 connections on
 * one key, each declaring a 1 MiB body and sending all but its last byte,
 * grew the server past 2 GiB. Now each body reserves its length before it is
 * read, within the server's budget and its project's share, and the rest are
 * answered 503 before a byte of their body is read.
 */
import { readFileSync } from 'node:fs';
import { afterAll, expect, it } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { cliJson } from '../helpers/cli.js';
import { provision, startServer, stopServer } from '../helpers/process.js';
import { type RawAnswer, type RawConnection, rawRequest } from '../helpers/raw-http.js';

const tmp = tempDir('inlet-slow-bodies-');
afterAll(() => tmp.remove());

const MIB = 1_048_576;
const SLOW = 1_000;
/** The project's share of bodies being read, in bodies of 1 MiB (INLET_READING_KEY_BUDGET_BYTES below). */
const HELD = 16;

/** Resident memory of a process, in bytes: now (VmRSS) or its peak so far (VmHWM). */
function memory(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

it('bodies being read are not bounded: 1,000 slow 1 MiB bodies on one key cost the server under 300 MiB, are refused 503 before reading, and another key is served meanwhile', async () => {
  const { org, source, key } = await provision({}, tmp.dir);
  // The other key is another project's: the first one's share does not stop it.
  const otherProject = await cliJson(['project', 'create', '--name', 'Other', '--org', org.id, '--api-enabled', '--data-dir', tmp.dir]);
  const otherSource = await cliJson(['source', 'create', '--project', otherProject.id, '--name', 'Other', '--data-dir', tmp.dir]);
  const other = await cliJson(['key', 'create', '--source', otherSource.id, '--data-dir', tmp.dir]);
  const server = await startServer(['--data-dir', tmp.dir], {
    INLET_READING_BUDGET_BYTES: String(64 * MIB),
    INLET_READING_KEY_BUDGET_BYTES: String(HELD * MIB),
    INLET_MAX_CONNECTIONS: '4096',
    // The per-key request limit would refuse most of them first; a sender that
    // spreads its connections over 10 s passes it, so it is off here.
    INLET_LIMIT_KEY_RPS: '0',
  });
  const pid = server.proc.pid!;
  const port = Number(new URL(server.url).port);
  const connections: RawConnection[] = [];
  try {
    // Warm up: the first request loads what every request needs.
    const warm = await rawRequest(port, batch(other.key, '{"items":[{"event":"warm","distinct_id":"u"}]}')).answer;
    expect(warm.status, warm.body).toBe(202);
    const before = memory(pid, 'VmRSS');

    // All but the last byte of a 1 MiB body, one buffer shared by every connection.
    const almost = Buffer.alloc(MIB - 1, 0x20);
    const head = `POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key.key}\r\nContent-Type: application/json\r\nContent-Length: ${MIB}\r\n\r\n`;
    const answers: RawAnswer[] = [];
    const refusals = () => answers.filter((a) => a.status === 503);
    let answered!: () => void;
    const allRefused = new Promise<void>((r) => (answered = r));
    for (let i = 0; i < SLOW; i++) {
      const c = rawRequest(port, head);
      c.socket.write(almost, () => undefined);
      c.socket.on('error', () => undefined);
      c.answer.then(
        (a) => {
          answers.push(a);
          if (refusals().length === SLOW - HELD) answered();
        },
        () => undefined,
      );
      connections.push(c);
    }
    // Every body past the project's share is answered; the ones within it are held, being read.
    // (The deadline only turns a server that answers none into a readable failure.)
    let deadline: NodeJS.Timeout | undefined;
    const unanswered = new Promise<void>((_, reject) => {
      deadline = setTimeout(() => reject(new Error(`after 40 s only ${answers.length} of ${SLOW - HELD} bodies past the project's share were answered; VmRSS ${memory(pid, 'VmRSS') >> 20} MiB`)), 40_000);
    });
    await Promise.race([allRefused, unanswered]).finally(() => clearTimeout(deadline));
    // A held body may meet the 30 s request timeout on a slow machine: that is a 408, never anything else.
    const held = answers.filter((a) => a.status !== 503);
    expect(new Set(held.map((a) => `${a.status} ${a.json?.error?.code}`))).toEqual(new Set(held.length === 0 ? [] : ['408 request_timeout']));
    expect(held.length).toBeLessThanOrEqual(HELD);
    const refused = refusals();
    expect(refused.every((a) => a.json?.error?.code === 'collection_unavailable')).toBe(true);
    expect(refused.every((a) => a.headers.get('retry-after') === '5' && a.headers.get('connection') === 'close')).toBe(true);
    expect(refused[0]!.json.error.message).toMatch(/This project already has as many request bodies being read/);

    // Meanwhile another key is served.
    const served = await rawRequest(port, batch(other.key, '{"items":[{"event":"served","distinct_id":"u"}]}')).answer;
    expect(served.status, served.body).toBe(202);

    const peak = memory(pid, 'VmHWM');
    expect(peak - before, `peak ${peak >> 20} MiB, before ${before >> 20} MiB`).toBeLessThan(300 * MIB);
  } finally {
    for (const c of connections) c.socket.destroy();
    await stopServer(server);
  }
  // Nothing of the slow ones is stored: only the other key's two batches.
  expect(await cliJson(['events', 'list', '--source', source.id, '--data-dir', tmp.dir])).toEqual([]);
  const events = await cliJson(['events', 'list', '--source', otherSource.id, '--data-dir', tmp.dir]);
  expect(events.map((e: { event: string }) => e.event).sort()).toEqual(['served', 'warm']);
});

function batch(key: string, body: string): string {
  return `POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}
