import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { sha256 } from '../../src/domain/sha256.js';
import { type Fixture, type FixtureOptions, makeFixture, send } from '../helpers/fixture.js';
import { type RawConnection, rawRequest } from '../helpers/raw-http.js';
import { FORM, form, makeUser, signIn } from './helpers.js';

/**
 * The console's live views over real sockets: capped per session and per
 * server, never taking the API's connections, and ended with their session.
 * Bounds on waits are far under the 15 s heartbeat, which used to be the only
 * moment a view noticed anything.
 */

/** Far under the heartbeat (15 s): a view still open then was not ended by what the test did. */
const WITHIN = { timeout: 5000, interval: 20 };

let f: Fixture | undefined;
afterEach(async () => {
  await f?.close();
  f = undefined;
});

async function listening(opts: FixtureOptions) {
  f = await makeFixture(opts);
  await makeUser(f.collector, f.clock.now, 'dev@acme.test', { orgIds: [f.orgId] });
  await f.app.listen({ port: 0, host: '127.0.0.1' });
  return { f, port: (f.app.server.address() as { port: number }).port };
}

/** A live view opened over its own connection; `ended` turns true once the server closed it. */
function openLive(port: number, sourceId: string, cookie: string): RawConnection & { ended: () => boolean } {
  const c = rawRequest(port, `GET /console/sources/${sourceId}/live HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${cookie}\r\n\r\n`);
  let ended = false;
  void c.closed.then(() => (ended = true));
  return { ...c, ended: () => ended };
}

const batchText = (key: string) => {
  const body = JSON.stringify({ items: [{ event: 'Paid', distinct_id: 'c1' }] });
  return `POST /api/v1/batch HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
};

const connections = (fx: Fixture) => new Promise<number>((resolve, reject) => fx.app.server.getConnections((e, n) => (e ? reject(e) : resolve(n))));

describe('one console session can take every connection slot', () => {
  it('caps live views per session and per server: past either, 429 with a short text the page shows', async () => {
    const { f, port } = await listening({ liveStreams: 3, liveStreamsPerSession: 2 });
    const a = await signIn(f.app, 'dev@acme.test');
    const b = await signIn(f.app, 'dev@acme.test');
    const open: RawConnection[] = [];
    try {
      for (let i = 0; i < 2; i++) open.push(openLive(port, f.sourceId, a.cookie));
      for (const c of open) expect((await c.answer).status).toBe(200);
      const third = await openLive(port, f.sourceId, a.cookie).answer;
      expect(third.status).toBe(429);
      expect(third.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(third.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(third.body).toMatch(/This session already has 2 live views open/);

      open.push(openLive(port, f.sourceId, b.cookie));
      expect((await open[2]!.answer).status).toBe(200);
      const past = await openLive(port, f.sourceId, b.cookie).answer;
      expect(past.status).toBe(429);
      expect(past.body).toMatch(/This server already has 3 live views open/);
    } finally {
      for (const c of open) c.socket.destroy();
    }
  });

  it('one user can take all live views on a server by signing in again and again: past 12 of one user\'s views, 429, and another user still opens one', async () => {
    // The defaults: 64 per server, 6 per session, 12 per user.
    const { f, port } = await listening({});
    await makeUser(f.collector, f.clock.now, 'ops@acme.test', { orgIds: [f.orgId] });
    const sessions: { cookie: string }[] = [];
    for (let i = 0; i < 3; i++) sessions.push(await signIn(f.app, 'dev@acme.test'));
    const other = await signIn(f.app, 'ops@acme.test');
    const open: RawConnection[] = [];
    try {
      for (const s of sessions.slice(0, 2)) for (let i = 0; i < 6; i++) open.push(openLive(port, f.sourceId, s.cookie));
      for (const c of open) expect((await c.answer).status).toBe(200);
      // A third session of the same user has none of its own open, yet gets none.
      const past = await openLive(port, f.sourceId, sessions[2]!.cookie).answer;
      expect(past.status).toBe(429);
      expect(past.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(past.body).toMatch(/You already have 12 live views open on this server, in all your sessions together/);
      open.push(openLive(port, f.sourceId, other.cookie));
      expect((await open.at(-1)!.answer).status).toBe(200);
      // A view of the user's closed: its place is theirs again.
      open[0]!.socket.destroy();
      await vi.waitFor(async () => {
        const again = openLive(port, f.sourceId, sessions[2]!.cookie);
        open.push(again);
        expect((await again.answer).status).toBe(200);
      }, WITHIN);
    } finally {
      for (const c of open) c.socket.destroy();
    }
  });

  it('while a session holds its maximum of views, a batch from another client and /healthz are answered; closed views are released at once', async () => {
    // Fewer API connections than the session's views: the views must not count against them.
    const { f, port } = await listening({ maxConnections: 2, liveStreams: 8, liveStreamsPerSession: 4 });
    const a = await signIn(f.app, 'dev@acme.test');
    const open: ReturnType<typeof openLive>[] = [];
    try {
      for (let i = 0; i < 4; i++) {
        open.push(openLive(port, f.sourceId, a.cookie));
        expect((await open[i]!.answer).status).toBe(200);
      }
      const refused = openLive(port, f.sourceId, a.cookie);
      expect((await refused.answer).status).toBe(429);
      // Refused views hold no connection of the API's.
      await refused.closed;
      const batch = await rawRequest(port, batchText(f.key)).answer;
      expect(batch.status, batch.body).toBe(202);
      const health = await rawRequest(port, 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n').answer;
      expect(health.status).toBe(200);

      // The client closes its side (FIN): the server lets go of every view without waiting for a write to fail.
      for (const c of open) c.socket.end();
      await vi.waitFor(async () => expect(await connections(f)).toBe(0), WITHIN);
      for (let i = 0; i < 4; i++) {
        open.push(openLive(port, f.sourceId, a.cookie));
        expect((await open.at(-1)!.answer).status).toBe(200);
      }
    } finally {
      for (const c of open) c.socket.destroy();
    }
  });
});

describe('a live-events client is ended with its session', () => {
  it('Sign out ends that session’s live views at once, and only them', async () => {
    const { f, port } = await listening({});
    const a = await signIn(f.app, 'dev@acme.test');
    const b = await signIn(f.app, 'dev@acme.test');
    const mine = [openLive(port, f.sourceId, a.cookie), openLive(port, f.sourceId, a.cookie)];
    const other = openLive(port, f.sourceId, b.cookie);
    try {
      for (const c of [...mine, other]) expect((await c.answer).status).toBe(200);
      const out = await f.app.inject({ method: 'POST', url: '/console/logout', headers: { ...FORM, cookie: a.cookie }, payload: form({ _csrf: a.csrf }) });
      expect(out.statusCode).toBe(303);
      await vi.waitFor(() => expect(mine.map((c) => c.ended())).toEqual([true, true]), WITHIN);
      expect(other.ended()).toBe(false);
    } finally {
      for (const c of [...mine, other]) c.socket.destroy();
    }
  });

  it('a session deleted from the store (inlet user delete from another process) or expired ends its views within a sweep', async () => {
    const { f, port } = await listening({});
    const a = await signIn(f.app, 'dev@acme.test');
    const b = await signIn(f.app, 'dev@acme.test');
    const deleted = openLive(port, f.sourceId, a.cookie);
    const idle = openLive(port, f.sourceId, b.cookie);
    try {
      for (const c of [deleted, idle]) expect((await c.answer).status).toBe(200);
      await f.collector.store.accounts.deleteSession(sha256(a.cookie.split('=')[1]!));
      await vi.waitFor(() => expect(deleted.ended()).toBe(true), WITHIN);
      expect(idle.ended()).toBe(false);
      // Eight hours without a request: the session idles out though its view stayed open.
      f.clock.advance(8 * 3600_000 + 1);
      await vi.waitFor(() => expect(idle.ended()).toBe(true), WITHIN);
    } finally {
      for (const c of [deleted, idle]) c.socket.destroy();
    }
  });
});

describe('a live-events client that never reads grows server memory without bound', () => {
  it('a view whose socket takes no byte for the write-progress timeout is ended, whatever room its buffer has left', async () => {
    // A buffer too large to fill here: only the timeout can end the view.
    const { f, port } = await listening({ liveStallMs: 200, liveBufferBytes: 2 ** 40, limits: { burst: 0, sustained: 0, keyRps: 0 } });
    const a = await signIn(f.app, 'dev@acme.test');
    const socket = connect(port, '127.0.0.1');
    try {
      await new Promise<void>((resolve, reject) => {
        let head = '';
        const onData = (d: Buffer) => {
          head += d.toString('latin1');
          if (!head.includes('\r\n\r\n')) return;
          socket.off('data', onData);
          socket.pause();
          if (head.startsWith('HTTP/1.1 200')) resolve();
          else reject(new Error(head.slice(0, 200)));
        };
        socket.on('data', onData);
        socket.on('error', () => undefined);
        socket.write(`GET /console/sources/${f.sourceId}/live HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${a.cookie}\r\n\r\n`);
      });
      const items = Array.from({ length: 500 }, (_, i) => ({ event: 'Order placed', distinct_id: `cust_${i % 50}` }));
      // Enough to fill both kernels' socket buffers at their largest, at 100 KB of lines a batch (they are more).
      const sysMax = (name: string) => Number(readFileSync(`/proc/sys/net/ipv4/${name}`, 'utf8').trim().split(/\s+/)[2]);
      const rounds = Math.ceil((sysMax('tcp_rmem') + sysMax('tcp_wmem')) / 100_000) + 10;
      let sent = 0;
      while (sent < rounds && (await connections(f)) > 0) {
        sent++;
        expect((await send(f, { items })).statusCode).toBe(202);
      }
      // Once the batches stop, a view still held can only end by the timeout.
      await vi.waitFor(async () => expect(await connections(f)).toBe(0), WITHIN);
    } finally {
      socket.destroy();
    }
  });
});
