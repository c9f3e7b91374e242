/**
 * Destinations with PostgreSQL: two `inlet serve` on one database, where a
 * second server takes a destination over when the one delivering it dies;
 * and a `postgres` destination, whose table holds exactly the stored events.
 */
import pg from 'pg';
import { afterEach, expect, it, vi } from 'vitest';
import { createTestDatabase } from '../conformance/stores.js';
import { describeWith } from '../helpers/needs-services.js';
import { type Server, cliJson, provision, runCli, startServer } from '../helpers/process.js';
import { Receiver } from '../helpers/receiver.js';

/** The databases and the receiver are on loopback: the operator's setting lets destinations reach them (the CLI that makes them reads it too). */
const PRIVATE = { INLET_DESTINATIONS_ALLOW_PRIVATE: 'true' };
const FAST = { ...PRIVATE, INLET_DESTINATION_LEASE_MS: '900', INLET_LIMIT_BURST: '0', INLET_LIMIT_SUSTAINED: '0', INLET_LIMIT_KEY_RPS: '0' };

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function database(): Promise<string> {
  const db = await createTestDatabase();
  cleanups.push(db.drop);
  return db.url;
}

async function serve(env: Record<string, string>): Promise<Server> {
  const s = await startServer([], { ...FAST, ...env });
  cleanups.push(async () => {
    if (s.proc.exitCode === null && s.proc.signalCode === null) {
      s.proc.kill('SIGTERM');
      await s.exited;
    }
  });
  return s;
}

async function send(server: Server, key: string, items: object[]): Promise<void> {
  const res = await fetch(`${server.url}/api/v1/batch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ items }),
  });
  const answer = (await res.json()) as { accepted: number };
  expect(res.status).toBe(202);
  expect(answer, JSON.stringify(answer)).toMatchObject({ accepted: items.length });
}

describeWith(['postgres'], 'destinations on PostgreSQL', () => {
  it('a second server takes a destination over when the server delivering it dies, and nothing is skipped', async () => {
    const env = { INLET_DATABASE_URL: await database(), ...PRIVATE };
    const receiver = await Receiver.start();
    cleanups.push(() => receiver.close());
    const { project, source, key } = await provision(env);
    const first = await serve(env);
    await cliJson(['destination', 'create', '--project', project.id, '--kind', 'webhook', '--url', receiver.url], env);
    const batch = (i: number) => Array.from({ length: 50 }, (_, k) => ({ event: `t${i}_${k}`, distinct_id: 'u1' }));
    await send(first, key.key, batch(0));
    await receiver.until(() => receiver.distinctIds.length === 50);

    const second = await serve(env);
    first.proc.kill('SIGKILL');
    await first.exited;
    for (let i = 1; i < 6; i++) await send(second, key.key, batch(i));
    await receiver.until(() => receiver.distinctIds.length === 300);
    const stored = ((await cliJson(['events', 'list', '--source', source.id, '--limit', '1000'], env)) as { id: string }[]).reverse();
    expect([...new Set(receiver.events.map((e) => e.id))]).toEqual(stored.map((e) => e.id));
  }, 180_000);

  it('a postgres destination makes its table and holds one row per stored event, equal to it', async () => {
    const env = { INLET_DATABASE_URL: await database(), ...PRIVATE };
    const target = await database();
    const { project, source, key } = await provision(env);
    const server = await serve(env);
    // The server trusts local connections: the password is not checked, only never shown.
    const withPassword = new URL(target);
    withPassword.password = 's3cr3t-pw';
    const made = await runCli(['destination', 'create', '--project', project.id, '--kind', 'postgres', '--url', withPassword.toString(), '--table', 'inlet_events', '--json'], env);
    expect(made.code, made.stderr).toBe(0);
    const d = JSON.parse(made.stdout) as { id: string };
    expect(d).toMatchObject({ kind: 'postgres', table: 'inlet_events', status: 'active', url: `postgres://${withPassword.username}:***@${withPassword.host}/***` });
    const listed = await runCli(['destination', 'list', '--project', project.id], env);
    for (const out of [made.stdout, made.stderr, listed.stdout, listed.stderr]) expect(out).not.toContain('s3cr3t-pw');
    await send(server, key.key, [
      { event: 'paid', distinct_id: 'u1', insert_id: 'i1', properties: { amount: 12.5, items: [{ sku: 'a', q: 2 }], note: 'ünïcode ✓', nothing: null } },
      { event: 'viewed', anonymous_id: 'per_1234567890abcdefghijkl', session_id: 'ses_1', timestamp: new Date(Date.now() - 61_234).toISOString() },
      { event: 'paid', distinct_id: 'u2', properties: { big: '12345678901234567890' } },
    ]);
    const stored = (await cliJson(['events', 'list', '--source', source.id], env)) as Record<string, unknown>[];
    expect(stored).toHaveLength(3);

    const c = new pg.Client({ connectionString: target });
    await c.connect();
    cleanups.push(() => c.end());
    const rows = await vi.waitFor(
      async () => {
        const r = await c.query('SELECT * FROM inlet_events ORDER BY received_at, id').catch(() => ({ rows: [] }));
        expect(r.rows).toHaveLength(3);
        return r.rows as Record<string, unknown>[];
      },
      { timeout: 30_000, interval: 100 },
    );
    const asStored = rows.map((r) => ({
      id: r.id, event: r.event, distinct_id: r.distinct_id, anonymous_id: r.anonymous_id, person_id: r.person_id,
      session_id: r.session_id, server_session: r.session_id === null, timestamp: (r.timestamp as Date).toISOString(),
      received_at: (r.received_at as Date).toISOString(), insert_id: r.insert_id, properties: r.properties,
    }));
    const byId = (a: Record<string, unknown>, b: Record<string, unknown>) => String(a.id).localeCompare(String(b.id));
    expect(asStored.sort(byId)).toEqual([...stored].sort(byId));
    for (const r of rows) expect(r).toMatchObject({ project_id: project.id, source_id: source.id });

    // Sent again (a replay), every event is still there once.
    await cliJson(['destination', 'replay', d.id, '--since', '2000-01-01'], env);
    await send(server, key.key, [{ event: 'after_replay', distinct_id: 'u3' }]);
    await vi.waitFor(
      async () => {
        const r = await c.query('SELECT count(*)::int AS n, count(DISTINCT id)::int AS ids FROM inlet_events');
        expect(r.rows[0]).toEqual({ n: 4, ids: 4 });
      },
      { timeout: 30_000, interval: 100 },
    );
  }, 180_000);

  it("a postgres destination is checked when it is made: a database that does not exist, and Inlet's own database, are refused at once", async () => {
    const own = await database();
    const env = { INLET_DATABASE_URL: own, ...PRIVATE };
    const { project } = await provision(env);
    const missing = new URL(own);
    missing.pathname = '/no_such_database_here';
    // Each refusal is a CLI of its own: they run side by side.
    const [gone, self] = await Promise.all([
      runCli(['destination', 'create', '--project', project.id, '--kind', 'postgres', '--url', missing.toString(), '--table', 't'], env),
      runCli(['destination', 'create', '--project', project.id, '--kind', 'postgres', '--url', own.replace('127.0.0.1', 'localhost'), '--table', 'events_20991231'], env),
    ]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('does not exist (SQLSTATE 3D000)');
    expect(self.code).toBe(1);
    expect(self.stderr).toContain("Refused: this is Inlet's own database");
    expect(await cliJson(['destination', 'list', '--project', project.id], env)).toEqual([]);
    const c = new pg.Client({ connectionString: own });
    await c.connect();
    cleanups.push(() => c.end());
    expect((await c.query("SELECT to_regclass('events_20991231') AS t")).rows[0]).toEqual({ t: null });
  }, 180_000);
});
