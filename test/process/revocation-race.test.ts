import net from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { type Fixture, makeFixture } from '../helpers/fixture.js';

let f: Fixture;
afterEach(async () => f?.close());

/** Sends the request head and all but the last bytes of the body; `finish` sends the rest and resolves with the raw answer. */
async function halfSent(port: number, key: string, body: string): Promise<{ finish: () => Promise<string> }> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  let answer = '';
  socket.on('data', (d) => (answer += d.toString()));
  const ended = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(
    `POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body.slice(0, -5)}`,
  );
  return {
    finish: async () => {
      socket.write(body.slice(-5));
      await ended;
      return answer;
    },
  };
}

it('revocation race: a key revoked while its body is being read gets 401 invalid_key, with nothing stored or metered', async () => {
  f = await makeFixture();
  // The route notes the key's use once it has authenticated it, before reading the body.
  let authenticated: () => void = () => {};
  const passedAuth = new Promise<void>((resolve) => (authenticated = resolve));
  const record = f.collector.recordKeyUse.bind(f.collector);
  f.collector.recordKeyUse = (keyId, at) => (record(keyId, at), authenticated());
  await f.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (f.app.server.address() as net.AddressInfo).port;

  const request = await halfSent(port, f.key, JSON.stringify({ items: [{ event: 'late', distinct_id: 'u', insert_id: 'r1' }] }));
  await passedAuth;
  const keyId = (await f.admin.listKeys(f.sourceId))[0]!.id;
  await f.admin.revokeKey(keyId);
  const answer = await request.finish();

  expect(answer).toMatch(/^HTTP\/1\.1 401 /);
  expect(answer).toContain('"code":"invalid_key"');
  expect(answer).toMatch(/request-id: req_/i);
  expect(await f.collector.store.listEvents(f.sourceId, 10)).toEqual([]);
  expect(await f.collector.store.usage(f.projectId, '2026-11')).toBe(0);
});
