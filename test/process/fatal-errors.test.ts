/**
 * `inlet serve` with an error nothing handles: nothing in the server throws
 * one on purpose, so a child process runs the CLI in-process (as
 * promise-hooks.test.ts does) and, once it listens, rejects a promise with a
 * string that stands for data, as a bug would.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { tempDir } from '../helpers/fixture.js';

const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const tmp = tempDir('inlet-fatal-');
afterAll(() => tmp.remove());

const CHILD = `
process.argv = [process.argv[0], 'inlet', 'serve', '--port', '0', '--metrics-port', '0', '--data-dir', process.env.DIR];
const write = process.stdout.write.bind(process.stdout);
let done = false;
process.stdout.write = (chunk, ...rest) => {
  if (!done && /listening on http/.test(String(chunk))) {
    done = true;
    setImmediate(() => Promise.reject('{"email":"ada@example.com","traits":{"plan":"pro"}}'));
  }
  return write(chunk, ...rest);
};
import(process.env.MAIN).then((m) => m.run());
`;

it('a promise that fails unhandled in the server ends it with code 1 and one fatal line, which does not quote the reason', async () => {
  const p = spawn(process.execPath, ['-e', CHILD], {
    env: { ...process.env, MAIN, DIR: tmp.dir, INLET_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d) => (stdout += d));
  p.stderr.on('data', (d) => (stderr += d));
  const code = await new Promise((r) => p.on('close', r));
  expect(stdout).toMatch(/listening on http/);
  expect(code).toBe(1);
  const lines = stderr.trim().split('\n');
  expect(lines, stderr).toHaveLength(1);
  expect(JSON.parse(lines[0]!)).toMatchObject({ level: 60, process: 'server', origin: 'unhandledRejection', err: { type: 'string' } });
  expect(stderr).not.toMatch(/ada@example|traits/);
});
