/**
 * s3 destinations against a real `inlet serve` on the embedded store and a
 * local S3-compatible store (s3rver), behind a proxy that can hold a file's
 * upload: every stored event is in exactly one file through a SIGKILL
 * mid-upload (before the store has the object, and after) and one just as
 * the upload is answered (before the cursor is written); and pause, resume,
 * replay --since, status, lag and the last error through the CLI.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it, vi } from 'vitest';
import { createTestDatabase } from '../conformance/stores.js';
import { tempDir } from '../helpers/fixture.js';
import { describeWith } from '../helpers/needs-services.js';
import { type Server, cliJson, provision, startServer } from '../helpers/process.js';
import { Receiver } from '../helpers/receiver.js';
import { type LocalS3, S3_KEYS, startS3 } from '../helpers/s3.js';

const PRIVATE = { INLET_DESTINATIONS_ALLOW_PRIVATE: 'true' };
const FAST = { ...PRIVATE, INLET_DESTINATION_LEASE_MS: '900', INLET_LIMIT_BURST: '0', INLET_LIMIT_SUSTAINED: '0', INLET_LIMIT_KEY_RPS: '0' };

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** `inlet serve` with short leases, stopped with SIGTERM after the test unless it was killed. */
async function serve(args: string[], env: Record<string, string> = {}): Promise<Server> {
  const s = await startServer(args, { ...FAST, ...env });
  cleanups.push(async () => {
    if (s.proc.exitCode === null && s.proc.signalCode === null) {
      s.proc.kill('SIGTERM');
      await s.exited;
    }
  });
  return s;
}

/** The ids of the events in every file under events/, in key order. */
async function filedIds(s3: LocalS3): Promise<string[]> {
  const out: string[] = [];
  for (const k of await s3.keys('events/')) for (const e of await s3.events(k)) out.push(e.id as string);
  return out;
}

/**
 * What the proxy does with the next upload (PUT): pass it through; `hold`
 * it before the store sees it; pass it and `holdAnswer` (the store has the
 * object, the server never hears so); or pass it and call `answered` as the
 * answer goes back.
 */
type Mode = { kind: 'pass' } | { kind: 'hold' } | { kind: 'holdAnswer' } | { kind: 'answered'; then: () => void };

async function proxyTo(target: number) {
  let mode: Mode = { kind: 'pass' };
  let held: (() => void) | null = null;
  const heldOnce: { resolve: () => void; promise: Promise<void> } = (() => {
    let resolve = (): void => undefined;
    const promise = new Promise<void>((r) => (resolve = r));
    return { resolve, promise };
  })();
  let waiting = heldOnce;
  const sockets = new Set<import('node:net').Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const m = req.method === 'PUT' ? mode : ({ kind: 'pass' } as Mode);
      if (m.kind === 'hold') {
        held = () => res.destroy();
        return waiting.resolve();
      }
      const up = http.request({ host: '127.0.0.1', port: target, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        const body: Buffer[] = [];
        answer.on('data', (c: Buffer) => body.push(c));
        answer.on('end', () => {
          if (m.kind === 'holdAnswer') {
            held = () => res.destroy();
            return waiting.resolve();
          }
          res.writeHead(answer.statusCode ?? 502, answer.headers).end(Buffer.concat(body));
          if (m.kind === 'answered') m.then();
        });
      });
      up.end(Buffer.concat(chunks));
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Sets what the next uploads meet; resolves when one is held (for the holding modes). */
    set(next: Mode): Promise<void> {
      mode = next;
      let resolve = (): void => undefined;
      const promise = new Promise<void>((r) => (resolve = r));
      waiting = { resolve, promise };
      return promise;
    },
    release() {
      held?.();
      held = null;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

async function setUp() {
  const tmp = tempDir('inlet-s3-dest-');
  const s3 = await startS3();
  const proxy = await proxyTo(s3.port);
  cleanups.push(() => tmp.remove(), () => s3.close(), () => proxy.close());
  const dd = ['--data-dir', tmp.dir];
  const { project, source, key } = await provision({}, tmp.dir);
  const serveHere = () => serve(dd);
  const create = (extra: string[] = [], endpoint = proxy.endpoint) =>
    cliJson(
      ['destination', 'create', '--project', project.id, '--kind', 's3', '--url', `s3://${s3.bucket}/events`, '--endpoint', endpoint,
        '--access-key-id', S3_KEYS.accessKeyId, '--secret-access-key', S3_KEYS.secretAccessKey, '--every', '1s', ...extra, ...dd],
      PRIVATE,
    );
  return { dd, s3, proxy, project, source, key, serve: serveHere, create };
}

async function send(server: Server, key: string, names: string[]): Promise<void> {
  const res = await fetch(`${server.url}/api/v1/batch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ items: names.map((event) => ({ event, distinct_id: 'u1', properties: { n: event } })) }),
  });
  await res.arrayBuffer();
  expect(res.status).toBe(202);
}

const batch = (tag: string, n = 50): string[] => Array.from({ length: n }, (_, k) => `${tag}_${k}`);

it.each([
  ['', false],
  [', with a webhook of the project feeding its files as it reads (file-turn.ts, FileFeeds)', true],
])('SIGKILL mid-upload (before and after the store has the object) and just as it is answered: every stored event is in exactly one file%s', async (_, fed) => {
  const w = await setUp();
  const d = await w.create();
  const receiver = fed ? await Receiver.start() : null;
  if (receiver !== null) {
    cleanups.push(() => receiver.close());
    await cliJson(['destination', 'create', '--project', w.project.id, '--kind', 'webhook', '--url', receiver.url, ...w.dd], PRIVATE);
  }
  let server = await w.serve();
  const all = () => filedIds(w.s3);
  const restart = async () => {
    server.proc.kill('SIGKILL');
    await server.exited;
    w.proxy.release();
    server = await w.serve();
  };

  await send(server, w.key.key, batch('a'));
  await vi.waitFor(async () => expect(await all()).toHaveLength(50), { timeout: 90_000, interval: 100 });

  // Killed while the upload waits, before the store has it.
  let held = w.proxy.set({ kind: 'hold' });
  await send(server, w.key.key, batch('b'));
  await held;
  w.proxy.set({ kind: 'pass' });
  await restart();

  // Killed after the store has the object, before the server heard so: the same key is written again.
  held = w.proxy.set({ kind: 'holdAnswer' });
  await send(server, w.key.key, batch('c'));
  await held;
  const keysThen = await w.s3.keys('events/');
  w.proxy.set({ kind: 'pass' });
  await restart();

  // Killed the moment its upload is answered: the cursor may or may not be written.
  const answered = new Promise<void>((resolve) => void w.proxy.set({ kind: 'answered', then: resolve }));
  await send(server, w.key.key, batch('d'));
  await answered;
  w.proxy.set({ kind: 'pass' });
  await restart();

  await send(server, w.key.key, batch('e'));
  const stored = (await cliJson(['events', 'list', '--source', w.source.id, '--limit', '10000', ...w.dd])) as { id: string }[];
  expect(stored).toHaveLength(250);
  await vi.waitFor(async () => expect(new Set(await all()).size).toBe(250), { timeout: 120_000, interval: 200 });
  const filed = await all();
  // Each event once: no file repeats another's events.
  expect(filed).toHaveLength(250);
  if (receiver !== null) await receiver.until(() => new Set(receiver.requests.flatMap((r) => r.json.events.map((e) => e.id))).size === 250);
  expect(new Set(filed)).toEqual(new Set(stored.map((e) => e.id)));
  // The object written before the kill is among the final ones, under the same key.
  for (const k of keysThen) expect(await w.s3.keys('events/')).toContain(k);
  // File ranges do not overlap.
  const ranges = (await w.s3.keys('events/')).map((k) => k.split('/').at(-1)!.split('.')[0]!.split('-').map(Number) as [number, number]).sort((x, y) => x[0] - y[0]);
  for (let i = 1; i < ranges.length; i++) expect(ranges[i]![0]).toBeGreaterThan(ranges[i - 1]![1]);
  // The cursor moves once the last upload is answered, a moment after its file is in the store.
  await vi.waitFor(async () => {
    const [listed] = await cliJson(['destination', 'list', '--project', w.project.id, ...w.dd]);
    expect(listed).toMatchObject({ id: d.id, kind: 's3', status: 'active', lag_events: 0, last_error: null, paused_reason: null });
  }, { timeout: 30_000, interval: 200 });
}, 300_000);

it('status, lag and the last error; pause, resume and replay --since through the CLI; the key is never shown', async () => {
  const w = await setUp();
  const d = await w.create(['--format', 'parquet']);
  expect(d).toMatchObject({ kind: 's3', url: `s3://${w.s3.bucket}/events`, endpoint: w.proxy.endpoint, access_key_id: S3_KEYS.accessKeyId, format: 'parquet', every: '1s', status: 'active' });
  expect(d).not.toHaveProperty('secret_access_key');
  const server = await w.serve();
  expect(await cliJson(['destination', 'pause', d.id, ...w.dd])).toMatchObject({ status: 'paused' });
  const since = new Date().toISOString();
  await send(server, w.key.key, batch('p', 20));
  let [listed] = await cliJson(['destination', 'list', '--project', w.project.id, ...w.dd]);
  expect(listed).toMatchObject({ status: 'paused', lag_events: 20, paused_reason: null });
  expect(await w.s3.keys('events/')).toEqual([]);

  // A store that refuses: failing, with its answer as the last error.
  w.proxy.set({ kind: 'pass' });
  const bad = await cliJson(
    ['destination', 'create', '--project', w.project.id, '--kind', 's3', '--url', 's3://missing-bucket/x', '--endpoint', w.proxy.endpoint,
      '--access-key-id', 'k', '--secret-access-key', 'wrong-secret-key', '--every', '1s', '--since', since, ...w.dd],
    PRIVATE,
  );
  await vi.waitFor(async () => {
    const rows = (await cliJson(['destination', 'list', '--project', w.project.id, ...w.dd])) as { id: string; status: string; last_error: string | null }[];
    expect(rows.find((r) => r.id === bad.id)).toMatchObject({ status: 'failing', last_error: expect.stringMatching(/^The object store answered 4\d\d \(\w+\)\.$/) });
  }, { timeout: 90_000, interval: 200 });
  expect(JSON.stringify(await cliJson(['destination', 'list', '--project', w.project.id, ...w.dd]))).not.toContain('wrong-secret-key');
  await cliJson(['destination', 'delete', bad.id, ...w.dd]);

  expect(await cliJson(['destination', 'resume', d.id, ...w.dd])).toMatchObject({ status: 'active' });
  await vi.waitFor(async () => expect(await w.s3.keys('events/')).toHaveLength(1), { timeout: 90_000, interval: 100 });
  const [first] = await w.s3.keys('events/');
  expect(first).toMatch(/\.parquet$/);
  expect((await w.s3.events(first!)).map((e) => e.event)).toEqual(batch('p', 20));
  // Counted once the upload is answered and the cursor moves, a moment after the file is in the store.
  await vi.waitFor(async () => {
    [listed] = await cliJson(['destination', 'list', '--project', w.project.id, ...w.dd]);
    expect(listed).toMatchObject({ status: 'active', delivered: 20, lag_events: 0 });
  }, { timeout: 30_000, interval: 100 });

  // A replay writes the same events again, from the time given; the file of the same range has the same name.
  expect(await cliJson(['destination', 'replay', d.id, '--since', since, ...w.dd])).toEqual({ id: d.id, replay_from: since });
  await vi.waitFor(async () => {
    const [row] = await cliJson(['destination', 'list', '--project', w.project.id, ...w.dd]);
    expect(row).toMatchObject({ delivered: 40, lag_events: 0 });
  }, { timeout: 90_000, interval: 100 });
  expect(await w.s3.keys('events/')).toEqual([first]);
  // The AWS SDK's warning that its releases after January 2027 need Node 22 is not the operator's to read (sender.ts).
  expect(server.stderr()).not.toContain('NodeVersionSupportWarning');
}, 240_000);

describeWith(['postgres'], 's3 destinations on PostgreSQL', () => {
  it('several servers on one database, the one delivering killed mid-upload and as its upload is answered: another takes over, and every stored event is in exactly one file', async () => {
    const db = await createTestDatabase();
    cleanups.push(db.drop);
    const env = { INLET_DATABASE_URL: db.url, ...PRIVATE };
    const s3 = await startS3();
    const proxy = await proxyTo(s3.port);
    cleanups.push(() => s3.close(), () => proxy.close());
    const { project, source, key } = await provision(env);
    const filed = () => filedIds(s3);
    const start = () => serve([], env);
    let delivering = await start();
    await cliJson(
      ['destination', 'create', '--project', project.id, '--kind', 's3', '--url', `s3://${s3.bucket}/events`, '--endpoint', proxy.endpoint,
        '--access-key-id', S3_KEYS.accessKeyId, '--secret-access-key', S3_KEYS.secretAccessKey, '--every', '1s'],
      env,
    );
    await send(delivering, key.key, batch('a'));
    await vi.waitFor(async () => expect(await filed()).toHaveLength(50), { timeout: 90_000, interval: 100 });

    // Killed after the store has the object and before it heard so, then as its upload is answered; a server already running takes over each time.
    for (const [i, mode] of (['holdAnswer', 'answered'] as const).entries()) {
      const next = await start();
      const killNow = mode === 'holdAnswer' ? proxy.set({ kind: 'holdAnswer' }) : new Promise<void>((then) => void proxy.set({ kind: 'answered', then }));
      await send(next, key.key, batch(`k${i}`));
      await killNow;
      proxy.set({ kind: 'pass' });
      delivering.proc.kill('SIGKILL');
      await delivering.exited;
      proxy.release();
      delivering = next;
    }
    await send(delivering, key.key, batch('z'));
    const stored = (await cliJson(['events', 'list', '--source', source.id, '--limit', '1000'], env)) as { id: string }[];
    expect(stored).toHaveLength(200);
    await vi.waitFor(async () => expect(new Set(await filed()).size).toBe(200), { timeout: 120_000, interval: 200 });
    const ids = await filed();
    expect(ids).toHaveLength(200);
    expect(new Set(ids)).toEqual(new Set(stored.map((e) => e.id)));
  }, 300_000);
});
