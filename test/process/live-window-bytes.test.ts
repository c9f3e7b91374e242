/**
 * A key holder could fill a watched source's live window with gigabytes: a
 * refused "$" key came back whole in its error's field and message, and the
 * window kept 500 such lines whatever their size. After 200 items with keys
 * of 900,000 characters the server held 350 MiB more, its source page was
 * 360 MB of HTML built on the main thread (stalling every other request for
 * seconds), and each request's event overflowed every live view's buffer.
 * Here over a real `inlet serve`, watched by a signed-in console user.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { runCli } from '../helpers/cli.js';
import { type Server, provision, startServer, stopServer } from '../helpers/process.js';
import { type RawConnection, rawRequest } from '../helpers/raw-http.js';

const MIB = 1024 * 1024;
const PASSWORD = 'correct horse battery staple';
/** A key as long as a body under 1 MiB allows. */
const KEY_LENGTH = 900_000;
const REQUESTS = 150;

const rss = (pid: number): number => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

const tmp = tempDir('inlet-live-bytes-');
let server: Server;
let key: string;
let sourceId: string;
let cookie: string;

beforeAll(async () => {
  const env = { INLET_DATA_DIR: tmp.dir, INLET_DATABASE_URL: '', INLET_REDIS_URL: '' };
  const p = await provision(env);
  key = p.key.key;
  sourceId = p.source.id;
  const made = await runCli(['user', 'create', '--email', 'dev@acme.test', '--org', p.org.id, '--password-stdin', '--json'], env, PASSWORD);
  expect(made.code, made.stderr).toBe(0);
  // One key sends every request at once: the per-key request limit is not what is tested.
  server = await startServer([], { ...env, INLET_LIMIT_KEY_RPS: '0' });
  const res = await fetch(`${server.url}/console/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ email: 'dev@acme.test', password: PASSWORD }).toString(),
    redirect: 'manual',
  });
  await res.arrayBuffer();
  expect(res.status).toBe(303);
  cookie = res.headers.get('set-cookie')!.split(';')[0]!;
}, 60_000);

afterAll(async () => {
  if (server) await stopServer(server);
  tmp.remove();
});

const longKeyBody = (i: number, length = KEY_LENGTH): string =>
  JSON.stringify({ items: [{ event: 'e', distinct_id: 'd', properties: { [`$${String(i).padStart(8, '0')}${'k'.repeat(length)}`]: 1 } }] });

async function post(body: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${server.url}/api/v1/batch`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body });
  return { status: res.status, text: await res.text() };
}

const sourcePage = async (): Promise<string> => {
  const res = await fetch(`${server.url}/console/sources/${sourceId}`, { headers: { cookie } });
  expect(res.status).toBe(200);
  return res.text();
};

it('an answer to an item with a 1 MB "$" key is small: the key is echoed cut, with its length said', async () => {
  const a = await post(longKeyBody(0, MIB - 200));
  expect(a.status).toBe(400);
  expect(a.text.length).toBeLessThan(2048);
  const error = JSON.parse(a.text).error;
  expect(error.code).toBe('all_items_invalid');
  expect(error.errors[0]).toMatchObject({ index: 0, code: 'reserved_property', field: expect.stringMatching(/^properties\.\$0{8}k+…$/) });
  expect(error.errors[0].message).toMatch(/^"\$0{8}k+…" \(\d+ characters\) is a reserved property name\./);
});

it('items with huge "$" keys sent to a watched source hold the server’s memory, the page stays small, and a live view is not dropped', async () => {
  const pid = server.proc.pid!;
  const port = Number(new URL(server.url).port);
  await sourcePage();
  const view: RawConnection = rawRequest(port, `GET /console/sources/${sourceId}/live HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: ${cookie}\r\n\r\n`);
  let viewEnded = false;
  void view.closed.then(() => (viewEnded = true));
  let events = 0;
  view.socket.on('data', (d: Buffer) => (events += d.toString('latin1').split('event: request').length - 1));
  expect((await view.answer).status).toBe(200);
  // Warm: the first large bodies load what every request needs.
  for (let i = 0; i < 5; i++) expect((await post(longKeyBody(i))).status).toBe(400);
  const before = rss(pid);
  for (let i = 0; i < REQUESTS; i++) expect((await post(longKeyBody(i))).status).toBe(400);
  const grown = rss(pid) - before;
  // Unbounded, the window kept 1.8 MB of text per request and the stream's rendering as much again: 300 MiB and more here.
  expect(grown, `VmRSS grew ${grown >> 20} MiB`).toBeLessThan(96 * MIB);
  const html = await sourcePage();
  expect(html.length).toBeLessThan(MIB);
  expect(html).toContain('is a reserved property name');
  // Every request's event reached the view, and the view is still open.
  await expect.poll(() => events, { timeout: 10_000 }).toBeGreaterThanOrEqual(REQUESTS + 5);
  expect(viewEnded).toBe(false);
  view.socket.destroy();
}, 120_000);
