/**
 * docs/nginx/inlet.conf in front of a real `inlet serve`, with a real nginx
 * (Debian's package) and TLS on a self-signed certificate made here. Only the
 * parts that cannot hold in a test are changed: ports, certificate paths and
 * the upstream's port; each change must find what it replaces, so the test
 * fails if the file drifts from what the guide says.
 *
 * Without nginx this file is skipped with one line, except in CI (.ci/run
 * installs it), where it fails.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import https from 'node:https';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { type Server, freePort, provision, runCli, startServer, stopServer } from '../helpers/process.js';

const PASSWORD = 'a console password, long enough';
const CONF = readFileSync(new URL('../../docs/nginx/inlet.conf', import.meta.url), 'utf8');

function findNginx(): string | null {
  for (const dir of [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/local/sbin']) {
    const p = join(dir, 'nginx');
    if (dir !== '' && existsSync(p)) return p;
  }
  return null;
}

const NGINX = findNginx();
if (NGINX === null && !process.env.CI) console.log('nginx test skipped: nginx is not installed (apt-get install nginx-light to run it)');

/** `text` with `from` replaced, failing if `from` is not there. */
function swap(text: string, from: string | RegExp, to: string): string {
  expect(text, `docs/nginx/inlet.conf no longer holds ${from}`).toMatch(from);
  return text.replace(from, to);
}

/** The number of seconds a directive sets (e.g. "35s"), in the server block. */
function seconds(directive: string): number {
  const m = new RegExp(`^\\s*${directive}\\s+(\\d+)s;`, 'm').exec(CONF);
  expect(m, `${directive} in docs/nginx/inlet.conf`).not.toBeNull();
  return Number(m![1]);
}

describe.skipIf(NGINX === null && !process.env.CI)('behind nginx with TLS (docs/nginx/inlet.conf)', () => {
  const tmp = tempDir('inlet-nginx-');
  let nginx: ChildProcess | null = null;
  let inlet: Server;
  let key: string;
  let cert: Buffer;
  let tlsPort: number;
  let plainPort: number;
  const publicUrl = () => `https://localhost:${tlsPort}`;

  beforeAll(async () => {
    expect(NGINX, 'nginx must be installed in CI (.ci/run installs it)').not.toBeNull();
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost',
      '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout', join(tmp.dir, 'key.pem'), '-out', join(tmp.dir, 'cert.pem'),
    ], { stdio: 'ignore' });
    cert = readFileSync(join(tmp.dir, 'cert.pem'));
    [tlsPort, plainPort] = [await freePort(), await freePort()];
    const data = join(tmp.dir, 'data');
    key = (await provision({}, data)).key.key;
    const made = await runCli(['user', 'create', '--data-dir', data, '--email', 'ops@acme.test', '--admin', '--password-stdin'], {}, `${PASSWORD}\n`);
    expect(made.code, made.stderr).toBe(0);
    inlet = await startServer(['--data-dir', data, '--base-url', publicUrl()]);
    const inletPort = new URL(inlet.url).port;

    let site = CONF;
    site = swap(site, 'server 127.0.0.1:8080;', `server 127.0.0.1:${inletPort};`);
    site = swap(site, /^\s*listen 80;$/m, `    listen 127.0.0.1:${plainPort};`);
    site = swap(site, /^\s*listen 443 ssl;$/m, `    listen 127.0.0.1:${tlsPort} ssl;`);
    site = swap(site, /^\s*listen \[::\]:80;$/m, '');
    site = swap(site, /^\s*listen \[::\]:443 ssl;$/m, '');
    site = swap(site, /ssl_certificate\s+\S+;/, `ssl_certificate ${join(tmp.dir, 'cert.pem')};`);
    site = swap(site, /ssl_certificate_key\s+\S+;/, `ssl_certificate_key ${join(tmp.dir, 'key.pem')};`);
    writeFileSync(join(tmp.dir, 'inlet.conf'), site);
    for (const d of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(tmp.dir, d));
    const temps = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t, i) => `${t}_temp_path ${join(tmp.dir, ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'][i]!)};`);
    writeFileSync(
      join(tmp.dir, 'nginx.conf'),
      `${process.getuid?.() === 0 ? 'user root;\n' : ''}daemon off;\nworker_processes 1;\npid ${join(tmp.dir, 'nginx.pid')};\nerror_log ${join(tmp.dir, 'error.log')} warn;\n` +
        `events { worker_connections 64; }\nhttp {\n  access_log off;\n  ${temps.join('\n  ')}\n  include ${join(tmp.dir, 'inlet.conf')};\n}\n`,
    );
    const args = ['-p', tmp.dir, '-c', join(tmp.dir, 'nginx.conf'), '-e', join(tmp.dir, 'error.log')];
    execFileSync(NGINX!, ['-t', '-q', ...args], { stdio: 'pipe' });
    nginx = spawn(NGINX!, args, { stdio: 'ignore' });
    // Listening once a connection to its TLS port goes through.
    await vi.waitFor(
      async () => {
        if (nginx!.exitCode !== null) throw new Error(`nginx exited ${nginx!.exitCode}: ${readFileSync(join(tmp.dir, 'error.log'), 'utf8')}`);
        const up = await new Promise<boolean>((resolve) => {
          const s = net.connect(tlsPort, '127.0.0.1', () => resolve(true)).on('error', () => resolve(false));
          s.on('connect', () => s.destroy());
        });
        expect(up, 'nginx listens on its TLS port').toBe(true);
      },
      { timeout: 10_000, interval: 50 },
    );
  });

  afterAll(async () => {
    if (nginx !== null && nginx.exitCode === null) {
      const gone = new Promise((r) => nginx!.once('exit', r));
      nginx.kill('SIGQUIT');
      await gone;
    }
    if (inlet) await stopServer(inlet);
    tmp.remove();
  });

  function request(method: string, path: string, body?: string | Buffer, headers: Record<string, string> = {}) {
    return new Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }>((resolve, reject) => {
      const req = https.request(
        { host: '127.0.0.1', port: tlsPort, servername: 'localhost', ca: cert, method, path, headers: { host: `localhost:${tlsPort}`, ...headers } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d) => (text += d));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }

  const batch = (items: unknown[], auth = key) =>
    request('POST', '/api/v1/batch', JSON.stringify({ items }), { authorization: `Bearer ${auth}`, 'content-type': 'application/json' });

  it('a batch sent through nginx over TLS is answered 202', async () => {
    const res = await batch([{ event: 'through_nginx', distinct_id: 'u1', insert_id: 'nginx-1' }]);
    expect(res.status).toBe(202);
    expect(JSON.parse(res.text)).toMatchObject({ accepted: 1 });
    expect(res.headers['request-id']).toMatch(/^req_/);
  });

  it('errors and the reference pages link to the public base URL', async () => {
    const refused = await batch([{ event: 'e', distinct_id: 'u' }], `srv_live_${'N'.repeat(32)}`);
    expect(refused.status).toBe(401);
    expect(JSON.parse(refused.text).error.docs_url).toBe(`${publicUrl()}/docs/api#invalid_key`);
    const page = await request('GET', '/docs/api');
    expect(page.status).toBe(200);
    expect(page.text).toContain(`${publicUrl()}/api/v1/batch`);
    expect(page.text).not.toContain(inlet.url);
  });

  it('a body over Inlet’s 1 MiB reaches Inlet, whose own 413 answers it (not nginx’s page)', async () => {
    const big = JSON.stringify({ items: [{ event: 'e', distinct_id: 'u', properties: { pad: 'x'.repeat(1_200_000) } }] });
    const res = await request('POST', '/api/v1/batch', big, { authorization: `Bearer ${key}`, 'content-type': 'application/json' });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.text).error.code).toBe('payload_too_large');
  });

  it('readiness answers through nginx; metrics never do; plain HTTP redirects to HTTPS', async () => {
    expect((await request('GET', '/readyz')).status).toBe(200);
    const metrics = await request('GET', '/metrics');
    expect(metrics.status).toBe(404);
    expect(JSON.parse(metrics.text).error.code).toBe('not_found');
    const plain = await new Promise<http.IncomingMessage>((resolve, reject) =>
      http.get({ host: '127.0.0.1', port: plainPort, path: '/api/v1/batch', headers: { host: 'inlet.example.com' } }, resolve).on('error', reject),
    );
    plain.resume();
    expect(plain.statusCode).toBe(301);
    expect(plain.headers.location).toBe('https://inlet.example.com/api/v1/batch');
  });

  it('the console signs in through nginx listening on a port other than 443', async () => {
    expect(tlsPort).not.toBe(443);
    // What a browser sends from the login page at https://localhost:<port>/console/login.
    const browser = { origin: publicUrl(), 'sec-fetch-site': 'same-origin', 'content-type': 'application/x-www-form-urlencoded' };
    const login = await request('POST', '/console/login', new URLSearchParams({ email: 'ops@acme.test', password: PASSWORD }).toString(), browser);
    expect(login.status, login.text).toBe(303);
    expect(login.headers.location).toBe('/console/projects');
    const cookie = String(login.headers['set-cookie']).split(';')[0]!;
    expect(cookie).toMatch(/^inlet_session=/);
    expect(String(login.headers['set-cookie'])).toMatch(/; Secure/);
    const projects = await request('GET', '/console/projects', undefined, { cookie });
    expect(projects.status).toBe(200);
    expect(projects.text).toContain('Web');
  });

  it('bodies, timeouts and forwarded headers are set as the guide says', () => {
    expect(CONF).toMatch(/^\s*client_max_body_size 2m;/m);
    expect(seconds('proxy_read_timeout')).toBeGreaterThan(30);
    expect(seconds('proxy_send_timeout')).toBeGreaterThan(30);
    expect(seconds('client_body_timeout')).toBeLessThanOrEqual(60);
    expect(CONF).toMatch(/^\s*proxy_set_header X-Forwarded-For \$remote_addr;/m);
    expect(CONF).toMatch(/^\s*proxy_set_header X-Forwarded-Proto \$scheme;/m);
    expect(CONF).toMatch(/^\s*proxy_set_header Host \$http_host;/m);
    expect(CONF).toMatch(/^\s*proxy_next_upstream error timeout;/m);
  });
});
