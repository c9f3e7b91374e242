/**
 * Webhook destinations against a real local receiver and a real `inlet
 * serve` on the embedded store: every stored event arrives, in arrival order
 * per source, through failures, a slow receiver and a SIGKILL of the server;
 * requests are signed as docs/destinations.md says.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { afterEach, expect, it } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { sourceJson } from '../../src/cli/views.js';
import { type Server, cliJson, freePort, provision, runCli, startServer, withAdmin } from '../helpers/process.js';
import { Receiver } from '../helpers/receiver.js';

/** The receiver is on loopback: the operator's setting lets destinations reach it (the CLI that makes them reads it too). */
const PRIVATE = { INLET_DESTINATIONS_ALLOW_PRIVATE: 'true' };
/** Short leases, so that a restarted server finds its dead predecessor's lease run out in about a second. */
const FAST = { ...PRIVATE, INLET_DESTINATION_LEASE_MS: '900', INLET_LIMIT_BURST: '0', INLET_LIMIT_SUSTAINED: '0', INLET_LIMIT_KEY_RPS: '0' };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setUp() {
  const tmp = tempDir('inlet-destinations-');
  const receiver = await Receiver.start();
  cleanups.push(() => tmp.remove(), () => receiver.close());
  const dd = ['--data-dir', tmp.dir];
  const { project, source, key } = await provision({}, tmp.dir);
  const { other, otherKey } = await withAdmin({}, tmp.dir, async (admin) => {
    const other = sourceJson(await admin.createSource({ projectId: project.id, name: 'Other' }));
    return { other, otherKey: await admin.createKey(other.id) };
  });
  const servers: Server[] = [];
  const serve = async (env: Record<string, string> = {}) => {
    const s = await startServer(dd, { ...FAST, ...env });
    servers.push(s);
    cleanups.push(async () => {
      if (s.proc.exitCode === null && s.proc.signalCode === null) {
        s.proc.kill('SIGTERM');
        await s.exited;
      }
    });
    return s;
  };
  return { tmp, dd, receiver, project, source, key, other, otherKey, serve, servers };
}

/** Sends one batch of `names` as track events; resolves with the answer's status. */
async function send(server: Server, key: string, names: string[]): Promise<number> {
  const res = await fetch(`${server.url}/api/v1/batch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ items: names.map((event) => ({ event, distinct_id: 'u1', properties: { n: event } })) }),
  });
  await res.arrayBuffer();
  return res.status;
}

/** The stored events of a source, oldest first, as `events list --json` shows them. */
async function stored(dd: string[], sourceId: string): Promise<{ id: string; event: string }[]> {
  return ((await cliJson(['events', 'list', '--source', sourceId, '--limit', '10000', ...dd])) as { id: string; event: string }[]).reverse();
}

/** Ids of the receiver's events of one source, each once, in the order first received. */
const firstSeen = (r: Receiver, sourceId: string): string[] => [...new Set(r.events.filter((e) => e.source_id === sourceId).map((e) => e.id))];

/** The check docs/destinations.md gives, in the same few lines. */
function verify(secret: string, header: string, body: string): boolean {
  const { t, v1 } = Object.fromEntries(header.split(',').map((p) => p.split('='))) as { t: string; v1: string };
  const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  return timingSafeEqual(Buffer.from(v1, 'hex'), expected);
}

it('a receiver that answers 500 for a while, then 2xx, gets every event, in arrival order per source, each request signed; list shows failing then active', async () => {
  const w = await setUp();
  const metricsPort = await freePort();
  const server = await w.serve({ INLET_METRICS_PORT: String(metricsPort) });
  let failing = true;
  w.receiver.answer = () => (failing ? { status: 500, headers: { 'retry-after': '0' } } : { status: 204 });
  const created = await cliJson(['destination', 'create', '--project', w.project.id, '--kind', 'webhook', '--url', w.receiver.url, ...w.dd], PRIVATE);
  // The path is masked (it may hold a token, as Slack's do).
  expect(created).toMatchObject({ project_id: w.project.id, kind: 'webhook', url: w.receiver.url.replace('/hook', '/***'), status: 'active', sources: [], events: [] });
  expect(created.secret).toMatch(/^whsec_/);

  for (let i = 0; i < 5; i++) expect(await send(server, w.key.key, [`a${i}_0`, `a${i}_1`])).toBe(202);
  await w.receiver.until(() => w.receiver.requests.length >= 3);
  const [listed] = await cliJson(['destination', 'list', '--project', w.project.id, ...w.dd]);
  expect(listed).toMatchObject({ id: created.id, status: 'failing', delivered: 0, last_error: 'The receiver answered 500.' });
  expect(listed.lag_events).toBeGreaterThan(0);
  expect(listed.oldest_undelivered_at).toMatch(/^\d{4}-/);

  failing = false;
  for (let i = 5; i < 10; i++) {
    expect(await send(server, w.key.key, [`a${i}_0`, `a${i}_1`])).toBe(202);
    expect(await send(server, w.otherKey.key, [`b${i}`])).toBe(202);
  }
  const a = await stored(w.dd, w.source.id);
  const b = await stored(w.dd, w.other.id);
  expect(a).toHaveLength(20);
  expect(b).toHaveLength(5);
  await w.receiver.until(() => w.receiver.distinctIds.length === 25);
  expect(firstSeen(w.receiver, w.source.id)).toEqual(a.map((e) => e.id));
  expect(firstSeen(w.receiver, w.other.id)).toEqual(b.map((e) => e.id));

  for (const r of w.receiver.requests) {
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.headers['idempotency-key']).toBe(r.json.batch_id);
    expect(r.json.destination_id).toBe(created.id);
    expect(verify(created.secret, r.headers['inlet-signature'] as string, r.body)).toBe(true);
    expect(verify('whsec_not_the_secret', r.headers['inlet-signature'] as string, r.body)).toBe(false);
  }
  const first = w.receiver.events.find((e) => e.event === 'a0_0')!;
  expect(first).toMatchObject({ project_id: w.project.id, source_id: w.source.id, distinct_id: 'u1', properties: { n: 'a0_0' }, server_session: true });

  // The cursor is written once each batch is answered: wait for the last one's write by asking again until it shows.
  let now = (await cliJson(['destination', 'list', '--project', w.project.id, ...w.dd]))[0];
  while (now.delivered < 25) now = (await cliJson(['destination', 'list', '--project', w.project.id, ...w.dd]))[0];
  expect(now).toMatchObject({ status: 'active', delivered: 25, lag_events: 0, oldest_undelivered_at: null, last_error: null });

  const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  expect(metrics).toContain(`inlet_destination_delivered_events_total{destination="${created.id}"} 25`);
  expect(metrics).toMatch(new RegExp(`inlet_destination_attempts_total\\{destination="${created.id}",outcome="failed"\\} [1-9]`));
  expect(metrics).toContain(`inlet_destination_lag_seconds{destination="${created.id}"}`);

  // Delivery ran in a process of its own, every thread of it at the lowest priority, the server's threads at theirs.
  if (process.platform === 'linux') {
    const nices = (pid: number) => readdirSync(`/proc/${pid}/task`).map((t) => Number(readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]));
    expect(nices(server.proc.pid!).every((n) => n === 0)).toBe(true);
    const delivery = childrenOf(server.proc.pid!);
    expect(delivery).toHaveLength(1);
    expect(new Set(nices(delivery[0]!))).toEqual(new Set([19]));
  }
}, 180_000);

it('a receiver that answers slowly does not slow a batch: ingestion is answered while the delivery waits', async () => {
  const w = await setUp();
  const server = await w.serve();
  w.receiver.answer = () => ({ hold: true });
  await cliJson(['destination', 'create', '--project', w.project.id, '--kind', 'webhook', '--url', w.receiver.url, ...w.dd], PRIVATE);
  expect(await send(server, w.key.key, ['first'])).toBe(202);
  await w.receiver.until(() => w.receiver.requests.length === 1);
  // The receiver holds its first request unanswered all along: every batch is still answered.
  for (let i = 0; i < 20; i++) expect(await send(server, w.key.key, Array.from({ length: 50 }, (_, k) => `slow${i}_${k}`))).toBe(202);
  expect(w.receiver.requests).toHaveLength(1);
  w.receiver.answer = () => ({ status: 200 });
  w.receiver.release(200);
  await w.receiver.until(() => w.receiver.distinctIds.length === 1001);
  expect(firstSeen(w.receiver, w.source.id)).toEqual((await stored(w.dd, w.source.id)).map((e) => e.id));

  // SIGTERM while a delivery waits on the receiver: the server stops cleanly, and the next one sends that batch.
  w.receiver.answer = () => ({ hold: true });
  expect(await send(server, w.key.key, ['last'])).toBe(202);
  await w.receiver.until(() => w.receiver.events.some((e) => e.event === 'last'));
  server.proc.kill('SIGTERM');
  expect(await server.exited).toBe(0);
  w.receiver.answer = () => ({ status: 200 });
  await w.serve();
  await w.receiver.until(() => w.receiver.requests.filter((r) => r.json.events.some((e) => e.event === 'last')).length === 2);
  const [listed] = await cliJson(['destination', 'list', '--project', w.project.id, ...w.dd]);
  expect(listed).toMatchObject({ status: 'active' });
}, 180_000);

/** The processes a process started and that still run (Linux /proc). */
function childrenOf(pid: number): number[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((tid) => readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean).map(Number));
}

/** Whether a process runs: neither gone nor a zombie waiting to be reaped. */
function running(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}

it('SIGKILL of the delivering server loses and skips nothing: a restarted server resumes from the durable cursor and sends the batch in flight again', async () => {
  const w = await setUp();
  let server = await w.serve();
  await cliJson(['destination', 'create', '--project', w.project.id, '--kind', 'webhook', '--url', w.receiver.url, ...w.dd], PRIVATE);
  // The third request is held, and the server killed while it waits for the answer.
  w.receiver.answer = (_, n) => (n === 2 ? { hold: true } : { status: 200 });
  for (let i = 0; i < 6; i++) {
    expect(await send(server, w.key.key, Array.from({ length: 100 }, (_, k) => `k${i}_${k}`))).toBe(202);
    if (i < 2) await w.receiver.until(() => w.receiver.requests.length === i + 1);
  }
  await w.receiver.until(() => w.receiver.requests.length === 3);
  // The delivery process holds the connection of the held request open (for 10 s): it ends with its server all the same.
  const delivery = process.platform === 'linux' ? childrenOf(server.proc.pid!) : [];
  if (process.platform === 'linux') expect(delivery).toHaveLength(1);
  server.proc.kill('SIGKILL');
  await server.exited;
  for (const pid of delivery) await expect.poll(() => running(pid), { timeout: 8_000 }).toBe(false);
  w.receiver.answer = () => ({ status: 200 });

  server = await w.serve();
  for (let i = 6; i < 8; i++) expect(await send(server, w.key.key, Array.from({ length: 100 }, (_, k) => `k${i}_${k}`))).toBe(202);
  const all = await stored(w.dd, w.source.id);
  expect(all).toHaveLength(800);
  await w.receiver.until(() => w.receiver.distinctIds.length === 800);
  expect(firstSeen(w.receiver, w.source.id)).toEqual(all.map((e) => e.id));
  // The batch in flight when the server died came again, from the restarted server.
  const held = w.receiver.requests[2]!.json.events.map((e) => e.id);
  expect(w.receiver.requests.slice(3).some((r) => r.json.events.some((e) => e.id === held[0]))).toBe(true);
}, 180_000);

it('pause, resume and replay --since: a paused destination gets nothing, then everything from its cursor; a replay sends again', async () => {
  const w = await setUp();
  const server = await w.serve();
  const d = await cliJson(['destination', 'create', '--project', w.project.id, '--kind', 'webhook', '--url', w.receiver.url, '--event', 'kept', ...w.dd], PRIVATE);
  expect(await cliJson(['destination', 'pause', d.id, ...w.dd])).toMatchObject({ id: d.id, status: 'paused' });
  expect(await send(server, w.key.key, ['kept', 'skipped', 'kept'])).toBe(202);
  const listed = await cliJson(['destination', 'list', '--project', w.project.id, ...w.dd]);
  expect(listed[0]).toMatchObject({ status: 'paused', lag_events: 2 });
  expect(w.receiver.requests).toHaveLength(0);

  expect(await cliJson(['destination', 'resume', d.id, ...w.dd])).toMatchObject({ status: 'active' });
  await w.receiver.until(() => w.receiver.events.length === 2);
  expect(w.receiver.events.map((e) => e.event)).toEqual(['kept', 'kept']);

  const replay = await cliJson(['destination', 'replay', d.id, '--since', '2000-01-01', ...w.dd]);
  expect(replay).toEqual({ id: d.id, replay_from: '2000-01-01T00:00:00.000Z' });
  await w.receiver.until(() => w.receiver.events.length === 4);
  expect(w.receiver.requests[1]!.json.events.map((e) => e.id)).toEqual(w.receiver.requests[0]!.json.events.map((e) => e.id));
  // A replay is new batches to the receiver: a new idempotency key.
  expect(w.receiver.requests[1]!.json.batch_id).not.toBe(w.receiver.requests[0]!.json.batch_id);

  expect(await cliJson(['destination', 'delete', d.id, ...w.dd])).toEqual({ id: d.id, deleted: true });
  expect(await cliJson(['destination', 'list', '--project', w.project.id, ...w.dd])).toEqual([]);
}, 180_000);

it('refuses a URL of the server itself, and never shows a password', async () => {
  const w = await setUp();
  const pgUrl = 'postgres://loader:s3cr3t-pw@db.example.com:5432/warehouse?sslpassword=another-secret';
  // Each refusal is a CLI of its own: they run side by side.
  const [self, viaBase, bad, refused] = await Promise.all([
    runCli(['destination', 'create', '--project', w.project.id, '--kind', 'webhook', '--url', 'http://localhost:8080/api/v1/batch', ...w.dd], PRIVATE),
    runCli(['destination', 'create', '--project', w.project.id, '--kind', 'webhook', '--url', 'https://inlet.example.com/x', ...w.dd], {
      INLET_BASE_URL: 'https://inlet.example.com',
    }),
    runCli(['destination', 'create', '--project', w.project.id, '--kind', 'postgres', '--url', pgUrl, ...w.dd]),
    runCli(['destination', 'create', '--project', w.project.id, '--kind', 'postgres', '--url', pgUrl, '--table', 'events_in', ...w.dd]),
  ]);
  expect(self.code).toBe(1);
  expect(self.stderr).toContain('points at this Inlet server');
  expect(viaBase.code).toBe(1);
  expect(bad.code).toBe(1);
  expect(bad.stderr).toContain('--table');
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain('"sslpassword" is not accepted');
  for (const out of [bad.stdout, bad.stderr, refused.stdout, refused.stderr]) {
    expect(out).not.toContain('s3cr3t-pw');
    expect(out).not.toContain('another-secret');
  }
  expect(await cliJson(['destination', 'list', '--project', w.project.id, ...w.dd])).toEqual([]);
}, 180_000);

it('destinations reach inside the network: the CLI refuses loopback on any port, metadata, private and mapped addresses, without the setting', async () => {
  const w = await setUp();
  // The CLI knows the server's port only from INLET_PORT: a server on another port is refused all the same, as loopback.
  // Each refusal is a CLI of its own: they run side by side.
  const urls = ['http://127.0.0.1:9999/x', 'http://[::ffff:127.0.0.1]:9999/x', 'http://169.254.169.254/latest', 'http://10.0.0.1/', 'http://192.0.2.2/'];
  const [pg, ...webhooks] = await Promise.all([
    runCli(['destination', 'create', '--project', w.project.id, '--kind', 'postgres', '--url', 'postgres://loader:s3cr3t-pw@127.0.0.1:5432/w', '--table', 't', ...w.dd]),
    ...urls.map((url) => runCli(['destination', 'create', '--project', w.project.id, '--kind', 'webhook', '--url', url, ...w.dd])),
  ]);
  urls.forEach((url, i) => {
    expect(webhooks[i]!.code, url).toBe(1);
    expect(webhooks[i]!.stderr, url).toContain('is, or resolves to, an address destinations may not reach');
  });
  expect(pg.code).toBe(1);
  expect(pg.stderr).toContain('Refused: 127.0.0.1 is, or resolves to');
  expect(pg.stderr).not.toContain('s3cr3t-pw');
  expect(await cliJson(['destination', 'list', '--project', w.project.id, ...w.dd])).toEqual([]);
}, 180_000);
