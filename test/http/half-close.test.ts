/**
 * A client may half-close its side once its whole request is sent and still
 * read the answer (HTTP/1.1 allows it). Over real sockets: app.inject has no FIN.
 */
import { afterEach, expect, it } from 'vitest';
import { type Fixture, makeFixture } from '../helpers/fixture.js';
import { portOf, rawRequest } from '../helpers/raw-http.js';

let f: Fixture;
afterEach(async () => f?.close());

function batch(path: string, n: number): string {
  const body = path.startsWith('/v1/')
    ? JSON.stringify({ batch: [{ type: 'track', event: 'half_closed', userId: 'u', messageId: `hc-${n}` }] })
    : JSON.stringify({ items: [{ event: 'half_closed', distinct_id: 'u', insert_id: `hc-${n}` }] });
  const auth = path.startsWith('/v1/') ? `Basic ${Buffer.from(`${f.key}:`).toString('base64')}` : `Bearer ${f.key}`;
  return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${auth}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

it('a stored batch whose client half-closed after sending it is still answered, and the server then closes the connection', async () => {
  f = await makeFixture();
  const port = portOf(await f.app.listen({ port: 0, host: '127.0.0.1' }));
  const conns = Array.from({ length: 20 }, (_, i) => {
    const c = rawRequest(port, batch(i % 2 === 0 ? '/api/v1/batch' : '/v1/batch', i));
    c.socket.end();
    return c;
  });
  const answers = await Promise.all(conns.map((c) => c.answer));
  expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? 202 : 200)));
  // The server ends each connection once it has answered: nothing is left open.
  await Promise.all(conns.map((c) => c.closed));
  const open = await new Promise<number>((resolve, reject) => f.app.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
  expect(open).toBe(0);
  const events = await f.collector.store.listEvents(f.sourceId, 100);
  expect(events).toHaveLength(20);
  expect(new Set(events.map((e) => e.insertId)).size).toBe(20);
});
