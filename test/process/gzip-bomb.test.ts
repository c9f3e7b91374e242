import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { createGzip } from 'node:zlib';
import { afterAll, expect, it } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { provision, startServer } from '../helpers/process.js';

const tmp = tempDir('inlet-bomb-');
afterAll(() => tmp.remove());

/** 1 GiB of zeros, gzipped, made in 1 MiB steps so the test itself stays small. */
async function bomb(): Promise<Buffer> {
  const gz = createGzip({ level: 9 });
  const parts: Buffer[] = [];
  gz.on('data', (c: Buffer) => parts.push(c));
  const done = new Promise((r) => gz.on('end', r));
  const zeros = Buffer.alloc(1 << 20);
  for (let i = 0; i < 1024; i++) {
    if (!gz.write(zeros)) await new Promise((r) => gz.once('drain', r));
  }
  gz.end();
  await done;
  return Buffer.concat(parts);
}

/** Peak resident memory of a process, in KiB (VmHWM). */
function peakKiB(pid: number): number {
  return Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
}

function post(url: string, key: string, body: Buffer): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/api/v1/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-encoding': 'gzip', 'content-length': body.length },
    });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

it('a body that inflates to 1 GiB is answered 413 quickly, and the server barely grows', async () => {
  const { key } = await provision({}, tmp.dir);
  const server = await startServer(['--data-dir', tmp.dir]);
  const payload = await bomb();
  expect(payload.length).toBeLessThan(1_048_576);
  // Warm up the path once with a small valid body so the baseline includes it.
  await post(server.url, key.key, await new Promise<Buffer>((r) => {
    const gz = createGzip();
    const parts: Buffer[] = [];
    gz.on('data', (c: Buffer) => parts.push(c)).on('end', () => r(Buffer.concat(parts)));
    gz.end(JSON.stringify({ items: [{ event: 'warm', distinct_id: 'u' }] }));
  }));
  const before = peakKiB(server.proc.pid!);
  const started = Date.now();
  const res = await post(server.url, key.key, payload);
  const ms = Date.now() - started;
  const after = peakKiB(server.proc.pid!);
  server.proc.kill('SIGTERM');
  await server.exited;
  console.log(`gzip bomb: ${payload.length} bytes inflating to 1 GiB answered ${res.status} in ${ms} ms; peak RSS ${before} KiB -> ${after} KiB`);
  expect(res.status).toBe(413);
  expect(JSON.parse(res.body).error.code).toBe('payload_too_large');
  expect(after - before).toBeLessThan(8 * 1024);
});
