/**
 * Regressions of what a careless or hostile client can send at the HTTP
 * level, over real sockets: Node parses these before any route, so
 * app.inject cannot show them.
 */
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { REQUEST_ERRORS, type RequestErrorCode } from '../../src/errors/codes.js';
import { EdgeCounters } from '../../src/edge/edge-counters.js';
import { type Fixture, type FixtureOptions, makeFixture } from '../helpers/fixture.js';
import { type RawAnswer, type RawConnection, portOf, rawRequest } from '../helpers/raw-http.js';

let f: Fixture;
let port: number;
afterEach(async () => f?.close());

async function listening(opts: FixtureOptions = {}): Promise<Fixture> {
  f = await makeFixture(opts);
  port = portOf(await f.app.listen({ port: 0, host: '127.0.0.1' }));
  return f;
}

const BODY = JSON.stringify({ items: [{ event: 'invoice_paid', distinct_id: 'user_1' }] });

/** A valid batch request as raw text, with the changes a test makes. */
function batchRequest(o: { line?: string; host?: string | null; extra?: string; body?: string } = {}): string {
  const body = o.body ?? BODY;
  const host = o.host === null ? '' : `Host: ${o.host ?? '127.0.0.1'}\r\n`;
  return (
    `${o.line ?? 'POST /api/v1/batch HTTP/1.1'}\r\n${host}Authorization: Bearer ${f.key}\r\nContent-Type: application/json\r\n` +
    `${o.extra ?? `Content-Length: ${Buffer.byteLength(body)}\r\n`}\r\n${body}`
  );
}

function expectEnvelope(a: RawAnswer, code: RequestErrorCode): void {
  expect(a.json?.error?.code, a.body).toBe(code);
  expect(a.status).toBe(REQUEST_ERRORS[code].status);
  expect(a.json.error.docs_url).toBe(`http://inlet.test/docs/api#${code}`);
  expect(a.json.error.message).toMatch(/\w/);
  expect(a.json.error.request_id).toMatch(/^req_/);
  expect(a.headers.get('request-id')).toBe(a.json.error.request_id);
}

describe("answers outside the envelope: Node's and Fastify's own refusals", () => {
  it('Content-Length with Transfer-Encoding, two Content-Lengths, an unknown method, no Host, two Hosts: 400 bad_request in the envelope', async () => {
    const counters = new EdgeCounters();
    await listening({ counters });
    const cases = [
      batchRequest({ extra: `Content-Length: ${BODY.length}\r\nTransfer-Encoding: chunked\r\n` }),
      batchRequest({ extra: `Content-Length: ${BODY.length}\r\nContent-Length: ${BODY.length}\r\n` }),
      batchRequest({ line: 'FOO /api/v1/batch HTTP/1.1' }),
      batchRequest({ host: null }),
      batchRequest({ extra: `Content-Length: ${BODY.length}\r\nHost: other.example\r\n` }),
      'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Header Name: x\r\n\r\n',
    ];
    for (const text of cases) {
      const c = rawRequest(port, text);
      const a = await c.answer;
      expectEnvelope(a, 'bad_request');
      expect(a.headers.get('connection')).toBe('close');
      await c.closed;
    }
    expect(counters.clientErrors).toBe(4);
    expect(await f.collector.store.listEvents(f.sourceId, 10)).toEqual([]);
  });

  it('a header of 20 KB: 431 headers_too_large in the envelope', async () => {
    await listening();
    const a = await rawRequest(port, batchRequest({ extra: `X-Big: ${'a'.repeat(20_000)}\r\nContent-Length: ${BODY.length}\r\n` })).answer;
    expectEnvelope(a, 'headers_too_large');
  });

  it('a body that never finishes: 408 request_timeout in the envelope, nothing stored', async () => {
    await listening({ requestTimeoutMs: 300 });
    const c = rawRequest(port, batchRequest({ body: BODY.slice(0, 10), extra: `Content-Length: ${BODY.length}\r\n` }));
    expectEnvelope(await c.answer, 'request_timeout');
    await c.closed;
    expect(await f.collector.store.listEvents(f.sourceId, 10)).toEqual([]);
  });

  it('a body that never finishes on an intake with its own shape (Amplitude\'s): 408 in that shape, which its SDK reads', async () => {
    await listening({ requestTimeoutMs: 300 });
    const c = rawRequest(port, batchRequest({ line: 'POST /2/httpapi HTTP/1.1', body: BODY.slice(0, 10), extra: `Content-Length: ${BODY.length}\r\n` }));
    const a = await c.answer;
    expect(a.status).toBe(408);
    expect(JSON.parse(a.body)).toEqual({ code: 408, error: expect.stringMatching(/^request_timeout: /) });
    await c.closed;
  });

  it('CONNECT, which Node would close without a word: 405 method_not_allowed in the envelope', async () => {
    await listening();
    const a = await rawRequest(port, 'CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n').answer;
    expectEnvelope(a, 'method_not_allowed');
  });

  it('the same request without those faults is stored (202)', async () => {
    await listening();
    const a = await rawRequest(port, batchRequest()).answer;
    expect(a.status, a.body).toBe(202);
  });
});

describe('a client that goes away mid-request', () => {
  it('is logged at info without a stack, counted, and never answered as a 500', async () => {
    const stream = new PassThrough();
    let logs = '';
    stream.on('data', (d) => (logs += d));
    const counters = new EdgeCounters();
    await listening({ logStream: stream, counters });
    const c = rawRequest(port, batchRequest({ body: BODY.slice(0, 10), extra: `Content-Length: ${BODY.length}\r\n` }));
    // Gone once the server has started on the body: wait for the request to be in hand.
    await new Promise<void>((resolve) => f.app.server.once('request', () => resolve()));
    c.socket.destroy();
    await c.closed;
    while (counters.clientsGone === 0) await new Promise((r) => setImmediate(r));
    const lines = logs.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    const gone = lines.filter((l) => /client gone/.test(l.msg));
    expect(gone).toHaveLength(1);
    expect(gone[0].level).toBe(30);
    expect(gone[0].err).toBeUndefined();
    expect(lines.filter((l) => l.status === 500)).toEqual([]);
    expect(counters.clientsGone).toBe(1);
    expect(await f.collector.store.listEvents(f.sourceId, 10)).toEqual([]);
  });
});

describe('a failure of ours is still one', () => {
  it('a bug after the body was read, over a socket, is a 500 internal_error logged at level 50, not a client gone', async () => {
    const stream = new PassThrough();
    let logs = '';
    stream.on('data', (d) => (logs += d));
    const counters = new EdgeCounters();
    const served = await listening({ logStream: stream, counters });
    // The app's own write path fails as a bug would: not the store (that is collection_unavailable).
    Object.defineProperty(served.collector, 'ingest', { value: async () => Promise.reject(new Error('a bug')) });
    const a = await rawRequest(port, batchRequest()).answer;
    expectEnvelope(a, 'internal_error');
    expect(counters.clientsGone).toBe(0);
    expect(logs.trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.level === 50 && l.msg === 'unexpected failure')).toHaveLength(1);
  });
});

describe('tracker hosts spelled around', () => {
  it('every spelling of a tracker host gets 404 not_found over a socket, and so does INLET_TRACKER_HOSTS written in capitals', async () => {
    await listening({ trackerHosts: ['T.Example.com.'] });
    for (const host of ['t.example.com', 't.example.com.', 't.example.com.:80', '[t.example.com]', 'T.EXAMPLE.COM', '[T.example.com.]:8080']) {
      const a = await rawRequest(port, batchRequest({ host })).answer;
      expectEnvelope(a, 'not_found');
      expect(a.json.error.message).toContain('tracker domain');
    }
    expect((await rawRequest(port, batchRequest({ host: 'app.example.com' })).answer).status).toBe(202);
  });
});

describe('absolute-form request targets', () => {
  it('POST http://host/api/v1/batch is routed as its path (202), and the host in the target is the one checked', async () => {
    await listening({ trackerHosts: ['t.example.com'] });
    const ok = await rawRequest(port, batchRequest({ line: `POST http://127.0.0.1:${port}/api/v1/batch HTTP/1.1` })).answer;
    expect(ok.status, ok.body).toBe(202);
    const query = await rawRequest(port, batchRequest({ line: `POST http://127.0.0.1:${port}/api/v1/batch?validate=true HTTP/1.1` })).answer;
    expect(query.status, query.body).toBe(200);
    // The target names the tracker host; the Host header is ignored (RFC 9112 §3.2.2).
    const tracker = await rawRequest(port, batchRequest({ line: 'POST HTTP://T.Example.com./api/v1/batch HTTP/1.1', host: 'app.example.com' })).answer;
    expectEnvelope(tracker, 'not_found');
    expect(tracker.json.error.message).toContain('tracker domain');
    const unknown = await rawRequest(port, batchRequest({ line: `POST http://127.0.0.1:${port}/api/v1/nope HTTP/1.1` })).answer;
    expectEnvelope(unknown, 'not_found');
    expect((await f.collector.store.listEvents(f.sourceId, 10)).length).toBe(1);
  });
});

describe('the same class elsewhere', () => {
  it('an Expect header other than 100-continue, which Node answered with a bare 417, goes through the checks like any request', async () => {
    await listening();
    const ok = await rawRequest(port, batchRequest({ extra: `Expect: something-else\r\nContent-Length: ${BODY.length}\r\n` })).answer;
    expect(ok.status, ok.body).toBe(202);
    const refused = await rawRequest(port, batchRequest({ line: 'POST /api/v1/nope HTTP/1.1', extra: `Expect: x\r\nContent-Length: ${BODY.length}\r\n` })).answer;
    expectEnvelope(refused, 'not_found');
  });

  it('connections past INLET_MAX_CONNECTIONS are closed at once, before anything of them is read', async () => {
    await listening({ maxConnections: 1 });
    const first = rawRequest(port, batchRequest());
    expect((await first.answer).status).toBe(202);
    // The first connection is kept alive and counted: the next one is dropped.
    const dropped = new Promise<void>((r) => f.app.server.once('drop', () => r()));
    const second = rawRequest(port, batchRequest());
    await dropped;
    await second.closed;
    await expect(second.answer).rejects.toThrow(/closed before a whole answer/);
    first.socket.destroy();
    expect((await f.collector.store.listEvents(f.sourceId, 10)).length).toBe(1);
  });
});

describe('bodies being read are bounded', () => {
  const MIB = 1_048_576;
  const until = async (cond: () => boolean): Promise<void> => {
    while (!cond()) await new Promise((r) => setImmediate(r));
  };
  const head = (key: string, length: string) =>
    `POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n${length}\r\n`;

  it("a project's share and the server's budget are reserved before reading; past either, 503 with Retry-After and Connection: close, and chunked bodies are refused once over", async () => {
    const { ReadBudget } = await import('../../src/edge/read-budget.js');
    // No keyless pool: this is about bodies with a key.
    const reading = new ReadBudget(1.5 * MIB, MIB, Infinity);
    await listening({ reading, limits: { keyRps: 0 } });
    // Keys B and C are another project's: the first project's share does not stop them.
    const project = await f.admin.createProject({ name: 'Other', apiEnabled: true });
    const source = await f.admin.createSource({ projectId: project.id, name: 'Other' });
    const b = (await f.admin.createKey(source.id)).key;
    const otherSource = await f.admin.createSource({ projectId: project.id, name: 'Other too' });
    const c = (await f.admin.createKey(otherSource.id)).key;
    const open: RawConnection[] = [];
    try {
      // Key A holds its whole share with a body that is still arriving.
      const slowA = rawRequest(port, head(f.key, `Content-Length: ${MIB}\r\n`) + ' '.repeat(1000));
      open.push(slowA);
      await until(() => reading.readingBytes === MIB);
      const overShare = await rawRequest(port, batchRequest()).answer;
      expectEnvelope(overShare, 'collection_unavailable');
      expect(overShare.json.error.message).toMatch(/This project already has as many request bodies being read/);
      expect(overShare.headers.get('retry-after')).toBe('5');
      expect(overShare.headers.get('connection')).toBe('close');

      // Key B's 1 MiB does not fit in what is left of the server's budget.
      const overServer = await rawRequest(port, head(b, `Content-Length: ${MIB}\r\n`)).answer;
      expectEnvelope(overServer, 'collection_unavailable');
      expect(overServer.json.error.message).toMatch(/This server is reading as many request bodies as it can hold/);

      // Key C's chunked body is counted as it arrives, and refused once past the server's budget.
      const chunk = ' '.repeat(300 * 1024);
      const chunked = rawRequest(port, `${head(c, 'Transfer-Encoding: chunked\r\n')}${chunk.length.toString(16)}\r\n${chunk}\r\n`);
      open.push(chunked);
      chunked.socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
      const overChunked = await chunked.answer;
      expectEnvelope(overChunked, 'collection_unavailable');
      expect(overChunked.json.error.message).toMatch(/This server is reading/);

      // A gives up: its reservation comes back, and every key is served again.
      slowA.socket.destroy();
      await until(() => reading.readingBytes === 0);
      expect((await rawRequest(port, batchRequest().replace(f.key, b)).answer).status).toBe(202);
      expect((await rawRequest(port, batchRequest().replace(f.key, c)).answer).status).toBe(202);
      expect(reading.readingBytes).toBe(0);
      expect((await f.collector.store.listEvents(source.id, 10)).length).toBe(1);
    } finally {
      for (const o of open) o.socket.destroy();
    }
  });

  it('keyless /v1 bodies held open by one client address do not lock out writeKey-in-body clients at other addresses', async () => {
    const { connect } = await import('node:net');
    const { ReadBudget } = await import('../../src/edge/read-budget.js');
    // A keyless pool of 2 MiB, 1 MiB per address.
    const reading = new ReadBudget(4 * MIB, MIB, 2 * MIB, MIB);
    await listening({ reading, limits: { keyRps: 0 } });
    const track = JSON.stringify({ writeKey: f.key, userId: 'u1', event: 'Order Completed' });
    const v1 = (length: number, body = '') =>
      `POST /v1/track HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n${body}`;
    // All of 127/8 is loopback on Linux: 127.0.0.2 is another client address.
    const holder = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
    holder.on('error', () => undefined);
    let held = '';
    holder.on('data', (d: Buffer) => (held += d.toString()));
    try {
      holder.write(v1(MIB, '{"wri'));
      await until(() => reading.readingBytes === MIB);
      // That address has its share: its next keyless body is refused...
      const second = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
      const refused = await new Promise<string>((resolve) => {
        let got = '';
        second.on('data', (d: Buffer) => (got += d.toString()));
        second.on('close', () => resolve(got));
        second.on('error', () => undefined);
        second.write(v1(MIB));
      });
      expect(refused).toMatch(/^HTTP\/1\.1 503 /);
      expect(refused).toMatch(/This client address already has as many request bodies being read/);
      // ...while a client at another address, its key in the body, is served.
      const a = await rawRequest(port, v1(Buffer.byteLength(track), track)).answer;
      expect(a.status, a.body).toBe(200);
      expect(held).toBe('');
      expect((await f.collector.store.listEvents(f.sourceId, 10)).length).toBe(1);
    } finally {
      holder.destroy();
    }
  });

  it('a gzip body reserves its bytes as sent, and its reservation comes back once it is read and decompressed', async () => {
    const { gzipSync } = await import('node:zlib');
    const { ReadBudget } = await import('../../src/edge/read-budget.js');
    const reading = new ReadBudget(4 * MIB, 2 * MIB);
    let seen = -1;
    const reserve = reading.reserve.bind(reading);
    reading.reserve = (share, bytes) => {
      const r = reserve(share, bytes);
      if (typeof r === 'string') return r;
      return { grow: r.grow, release: () => ((seen = reading.readingBytes), r.release()) };
    };
    await listening({ reading });
    const zipped = gzipSync(BODY);
    const res = await f.app.inject({
      method: 'POST',
      url: '/api/v1/batch',
      headers: { authorization: `Bearer ${f.key}`, 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: zipped,
    });
    expect(res.statusCode, res.body).toBe(202);
    expect(seen).toBe(zipped.length);
    expect(reading.readingBytes).toBe(0);
  });
});

