/**
 * One tenant can take the whole reading budget for keyed bodies (regression):
 * one project with 4 sources (6 keys) sent 16 slow 1 MiB bodies per key; the
 * share was per key (16 MiB), keys cost a project nothing, so 56 MiB were
 * held and another organisation's batch got 503. Now the share is per
 * project, all its keys together.
 */
import { afterAll, expect, it, vi } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { cliJson } from '../helpers/cli.js';
import { freePort, provision, readingBytes, startServer, stopServer } from '../helpers/process.js';
import { type RawAnswer, type RawConnection, rawRequest } from '../helpers/raw-http.js';

const tmp = tempDir('inlet-project-share-');
afterAll(() => tmp.remove());

const MIB = 1_048_576;
/** Slow bodies sent on each of the project's keys: a key's worth of the share each. */
const PER_KEY = 16;

it('one tenant can take the whole reading budget for keyed bodies: slow bodies on 6 keys of one project hold at most its 16 MiB share, and another project\'s batch is answered 202', async () => {
  const dd = ['--data-dir', tmp.dir];
  const { org, project, source, key } = await provision({}, tmp.dir);
  const keys = [key.key, (await cliJson(['key', 'create', '--source', source.id, ...dd])).key];
  for (let s = 0; s < 3; s++) {
    const more = await cliJson(['source', 'create', '--project', project.id, '--name', `More ${s}`, ...dd]);
    keys.push((await cliJson(['key', 'create', '--source', more.id, ...dd])).key);
    if (s === 0) keys.push((await cliJson(['key', 'create', '--source', more.id, ...dd])).key);
  }
  expect(keys.length).toBe(6);
  const otherProject = await cliJson(['project', 'create', '--name', 'Other', '--org', org.id, '--api-enabled', ...dd]);
  const otherSource = await cliJson(['source', 'create', '--project', otherProject.id, '--name', 'Other', ...dd]);
  const otherKey = (await cliJson(['key', 'create', '--source', otherSource.id, ...dd])).key;

  const metricsPort = await freePort();
  // The reading settings are the defaults: 64 MiB, 8 MiB of it for keyless bodies, 16 MiB a project's share.
  const server = await startServer(dd, { INLET_METRICS_PORT: String(metricsPort), INLET_LIMIT_KEY_RPS: '0' });
  const port = Number(new URL(server.url).port);
  const connections: RawConnection[] = [];
  try {
    const warm = await rawRequest(port, batch(otherKey, 'warm')).answer;
    expect(warm.status, warm.body).toBe(202);

    // All but the last byte of a 1 MiB body on every key of the project.
    const rest = Buffer.alloc(MIB - 1 - Buffer.byteLength('{"items":['), 0x20);
    const answers: RawAnswer[] = [];
    for (const k of keys) {
      const head = `POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${k}\r\nContent-Type: application/json\r\nContent-Length: ${MIB}\r\n\r\n{"items":[`;
      for (let i = 0; i < PER_KEY; i++) {
        const c = rawRequest(port, head);
        c.socket.on('error', () => undefined);
        c.socket.write(rest, () => undefined);
        c.answer.then((x) => answers.push(x), () => undefined);
        connections.push(c);
      }
    }
    // Every body is either answered or held, being read: wait until the server has seen them all.
    const total = keys.length * PER_KEY;
    let held = 0;
    await vi.waitFor(
      async () => {
        held = (await readingBytes(metricsPort)) / MIB;
        expect(answers.length + held).toBe(total);
      },
      { timeout: 60_000, interval: 50 },
    );
    expect(held).toBe(16);
    const share = 'This project already has as many request bodies being read';
    expect(new Set(answers.map((a) => `${a.status} ${String(a.json?.error?.message).startsWith(share)}`))).toEqual(new Set(['503 true']));

    // Meanwhile another project's batch is read and stored.
    const served = await rawRequest(port, batch(otherKey, 'served')).answer;
    expect(served.status, served.body).toBe(202);
  } finally {
    for (const c of connections) c.socket.destroy();
    await stopServer(server);
  }
});

function batch(key: string, event: string): string {
  const items = Array.from({ length: 50 }, (_, i) => ({ event, distinct_id: `u${i}` }));
  const body = JSON.stringify({ items });
  return `POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}
