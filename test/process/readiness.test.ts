/**
 * /readyz of a real `inlet serve`: off as soon as a stop begins (the API still
 * serving meanwhile), and off while PostgreSQL is away (stopped or frozen, at
 * the network level, by the TCP proxy of test/helpers/tcp-proxy.ts), on again
 * once it answers, with nothing restarted.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../conformance/stores.js';
import { tempDir } from '../helpers/fixture.js';
import { cliJson } from '../helpers/cli.js';
import { type Server, freePort, provision, startServer, stopServer } from '../helpers/process.js';
import { describeWith } from '../helpers/needs-services.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

async function get(url: string): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(15_000) });
  return { status: res.status, body: await res.json() };
}

function batch(server: Server, key: string, insertId: string) {
  return fetch(`${server.url}/api/v1/batch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ items: [{ event: 'ready_test', distinct_id: 'u', insert_id: insertId }] }),
  });
}

describe('during a stop', () => {
  const tmp = tempDir('inlet-readyz-stop-');
  afterAll(() => tmp.remove());

  it('answers 503 from the moment SIGTERM arrives, keeps serving through the drain, and a second signal ends it', async () => {
    const { key } = await provision({}, tmp.dir);
    const server = await startServer(['--data-dir', tmp.dir], { INLET_STOP_DRAIN_MS: '60000', INLET_LOG_LEVEL: 'info' });
    try {
      expect((await get(`${server.url}/readyz`)).status).toBe(200);
      const stopping = new Promise<void>((resolve) => {
        const look = () => (server.stderr().includes('"stopping: ') ? resolve() : undefined);
        server.proc.stderr!.on('data', look);
        look();
      });
      server.proc.kill('SIGTERM');
      await stopping;
      const ready = await get(`${server.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(ready.body.error).toMatchObject({ code: 'collection_unavailable', message: expect.stringContaining('stopping') });
      expect((await get(`${server.url}/healthz`)).status).toBe(200);
      expect((await batch(server, key.key, 'during-drain')).status).toBe(202);
      server.proc.kill('SIGTERM');
      expect(await server.exited).toBe(0);
    } finally {
      await stopServer(server);
    }
  });
});

describeWith(['postgres'], 'during a PostgreSQL outage', () => {
  let db: { url: string; drop: () => Promise<void> } | undefined;
  let proxy: TcpProxy | undefined;
  let server: Server | undefined;
  afterAll(async () => {
    proxy?.set('up');
    if (server) await stopServer(server);
    await proxy?.close();
    await db?.drop();
  });

  it('answers 503 while the database is stopped or frozen, and 200 again once it answers', async () => {
    db = await createTestDatabase();
    const env = { INLET_DATABASE_URL: db.url };
    const org = await cliJson(['org', 'create', '--name', 'Ready'], env);
    const project = await cliJson(['project', 'create', '--name', 'Web', '--org', org.id, '--api-enabled'], env);
    const source = await cliJson(['source', 'create', '--project', project.id, '--name', 'Backend'], env);
    const key = (await cliJson(['key', 'create', '--source', source.id], env)).key as string;
    proxy = await TcpProxy.forUrl(db.url, 5432);
    const metricsPort = await freePort();
    server = await startServer([], { INLET_DATABASE_URL: proxy.urlThrough(db.url), INLET_METRICS_PORT: String(metricsPort) });
    const readyz = `${server.url}/readyz`;
    // On a loaded machine one check may take more than its second: ready within a few tries.
    const readyWithin = async (tries: number) => {
      let answer = await get(readyz);
      for (let i = 1; i < tries && answer.status !== 200; i++) answer = await get(readyz);
      return answer.status;
    };
    expect(await readyWithin(20)).toBe(200);

    for (const outage of ['down', 'hang'] as const) {
      proxy.set(outage);
      const answer = await get(readyz);
      expect(answer.status, outage).toBe(503);
      expect(answer.body.error.message).toContain('the store did not answer');
      // Alive all along: a restart would not bring the database back.
      expect((await get(`${server.url}/healthz`)).status).toBe(200);
      proxy.set('up');
      // The pool opens a fresh connection on the next query: ready again without a restart.
      expect(await readyWithin(20), `after ${outage}`).toBe(200);
    }
    expect((await batch(server, key, 'after-outage')).status).toBe(202);
    const scrape = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(Number(/^inlet_store_errors_total\{operation="ping"\} (\d+)$/m.exec(scrape)?.[1])).toBeGreaterThanOrEqual(2);
    // Never on the public port.
    expect((await fetch(`${server.url}/metrics`)).status).toBe(404);
  });
});
