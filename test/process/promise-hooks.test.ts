/**
 * `inlet serve` runs with Node's promise hooks off. An AsyncLocalStorage in
 * use (the CLI's per-command io once wrapped every command, serve included)
 * turns them on for the process, and every promise of every request then
 * pays for them. Node has no public way to ask, so a child process started
 * with --expose-internals counts the hooks enabled while it serves a request.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';
import { tempDir } from '../helpers/fixture.js';

const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const tmp = tempDir('inlet-hooks-');
afterAll(() => tmp.remove());

// Runs `inlet serve` in this process; once it prints its address, sends it a batch and a health
// check, then prints the number of async hooks enabled and stops the server.
const CHILD = `
const { getHookArrays } = require('internal/async_hooks');
const main = process.env.MAIN;
process.argv = [process.argv[0], 'inlet', 'serve', '--port', '0', '--metrics-port', '0', '--data-dir', process.env.DIR];
const write = process.stdout.write.bind(process.stdout);
let asked = false;
process.stdout.write = (chunk, ...rest) => {
  const m = /http:\\/\\/[^\\s/]+:(\\d+)/.exec(String(chunk));
  if (m !== null && !asked) {
    asked = true;
    const base = 'http://127.0.0.1:' + m[1];
    const batch = { method: 'POST', headers: { authorization: 'Bearer sk_nope', 'content-type': 'application/json' }, body: '{"batch":[]}' };
    fetch(base + '/api/v1/batch', batch).then(() => fetch(base + '/healthz')).then(() => {
      process.stderr.write('HOOKS ' + getHookArrays()[0].length + '\\n');
      process.kill(process.pid, 'SIGTERM');
    });
  }
  return write(chunk, ...rest);
};
import(main).then((m) => m.run());
`;

it('serves with no async hook enabled', async () => {
  const p = spawn(process.execPath, ['--expose-internals', '-e', CHILD], {
    env: { ...process.env, MAIN, DIR: tmp.dir, INLET_LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  p.stdout.resume();
  p.stderr.on('data', (d) => (stderr += d));
  await new Promise((r) => p.on('close', r));
  expect(stderr).toMatch(/^HOOKS 0$/m);
});
