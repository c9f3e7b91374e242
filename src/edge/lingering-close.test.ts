import { connect } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Fixture, makeFixture } from '../../test/helpers/fixture.js';

let f: Fixture;
let port: number;
beforeAll(async () => {
  f = await makeFixture();
  await f.app.listen({ port: 0, host: '127.0.0.1' });
  port = (f.app.server.address() as { port: number }).port;
});
afterAll(() => f.close());

it('a body refused before it is read: the client gets the answer, and what it still sends is read and dropped, never reset', async () => {
  const socket = connect(port, '127.0.0.1');
  const head = `POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${f.key}\r\nContent-Type: application/json\r\nContent-Length: ${4 << 20}\r\n\r\n`;
  let received = '';
  const answered = new Promise<void>((resolve) =>
    socket.on('data', (d) => {
      received += d.toString('latin1');
      if (received.includes('\r\n\r\n')) resolve();
    }),
  );
  const closed = new Promise<{ error: string | null }>((resolve) => {
    let error: string | null = null;
    socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    socket.on('close', () => resolve({ error }));
  });
  socket.write(head);
  socket.write(Buffer.alloc(256 << 10, 0x20));
  await answered;
  expect(received).toMatch(/^HTTP\/1\.1 413 /);
  expect(received.toLowerCase()).toContain('connection: close');
  // Sent after the answer: without lingering, the server has closed and these bytes draw a reset.
  await new Promise<void>((resolve) => socket.write(Buffer.alloc(1 << 20, 0x20), () => resolve()));
  socket.end();
  expect(await closed).toEqual({ error: null });
});
