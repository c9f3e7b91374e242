/**
 * `inlet serve` that cannot start must say why in one line on stderr and
 * exit non-zero, instead of hanging with whatever it had opened (regression:
 * a port in use, or INLET_LOG_LEVEL=verbose, left the process running).
 */
import { spawn } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { BIN } from '../helpers/process.js';

/** Past this the process counts as hung: it is killed and the test fails. */
const HUNG_MS = 30_000;

function serveUntilExit(args: string[], env: Record<string, string>) {
  return new Promise<{ code: number | null; hung: boolean; stdout: string; stderr: string }>((resolve) => {
    const p = spawn(process.execPath, [BIN, 'serve', ...args], {
      env: { ...process.env, INLET_LOG_LEVEL: 'info', INLET_METRICS_PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let hung = false;
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    const guard = setTimeout(() => {
      hung = true;
      p.kill('SIGKILL');
    }, HUNG_MS);
    p.on('close', (code) => {
      clearTimeout(guard);
      resolve({ code, hung, stdout, stderr });
    });
  });
}

const tmp = tempDir('inlet-start-');
let held: net.Server;
let heldPort: number;

beforeAll(async () => {
  held = net.createServer();
  await new Promise<void>((r) => held.listen(0, '127.0.0.1', () => r()));
  heldPort = (held.address() as net.AddressInfo).port;
});
afterAll(async () => {
  await new Promise((r) => held.close(r));
  tmp.remove();
});

describe('inlet serve exits non-zero with one line naming what to change', () => {
  const cases: [string, () => { args: string[]; env: Record<string, string> }, RegExp][] = [
    ['the port in use', () => ({ args: ['--port', String(heldPort)], env: {} }), /already in use.*--port \/ INLET_PORT/],
    ['the metrics port in use', () => ({ args: ['--port', '0', '--metrics-port', String(heldPort)], env: {} }), /already in use.*--metrics-port \/ INLET_METRICS_PORT/],
    ['an unknown log level', () => ({ args: ['--port', '0'], env: { INLET_LOG_LEVEL: 'verbose' } }), /INLET_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent, not "verbose"/],
    ['a Redis URL that is not one', () => ({ args: ['--port', '0'], env: { INLET_REDIS_URL: 'notaurl' } }), /INLET_REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL/],
    ['a port that is not a number', () => ({ args: ['--port', 'eighty'], env: {} }), /--port \/ INLET_PORT must be a whole number from 0 to 65535/],
    ['a limit that is not a whole number', () => ({ args: ['--port', '0'], env: { INLET_LIMIT_BURST: '1.5' } }), /INLET_LIMIT_BURST must be a whole number/],
    ['a drain longer than allowed', () => ({ args: ['--port', '0'], env: { INLET_STOP_DRAIN_MS: '900000' } }), /INLET_STOP_DRAIN_MS must be a whole number from 0 to 60000/],
    ['a data directory that is a file', () => ({ args: ['--port', '0', '--data-dir', join(tmp.dir, 'a-file')], env: {} }), /--data-dir \/ INLET_DATA_DIR/],
  ];
  it.each(cases)('%s', async (_name, make, message) => {
    writeFileSync(join(tmp.dir, 'a-file'), 'not a directory');
    const { args, env } = make();
    const r = await serveUntilExit(['--data-dir', tmp.dir, ...args], env);
    expect(r.hung, 'the process had to be killed').toBe(false);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines, r.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^inlet: /);
    expect(lines[0]).toMatch(message);
  });
});

describe('inlet serve with its ports taken', () => {
  it('fault: a port clash was reported one port at a time (metrics, then the API after a restart); it names every port in use at once, and makes no store', async () => {
    const other = net.createServer();
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', () => r()));
    const otherPort = (other.address() as net.AddressInfo).port;
    try {
      const dir = join(tmp.dir, 'never-made');
      const r = await serveUntilExit(['--data-dir', dir, '--port', String(heldPort), '--metrics-port', String(otherPort)], {});
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines, r.stderr).toHaveLength(1);
      expect(lines[0]).toContain(`already in use by other processes: ${heldPort} on 127.0.0.1 (--port / INLET_PORT) and ${otherPort} on 127.0.0.1 (--metrics-port / INLET_METRICS_PORT)`);
      // Free ports to use instead, neither of them one of those taken.
      const [, api, metrics] = /e\.g\. --port (\d+) --metrics-port (\d+) \(all free now\)\.$/.exec(lines[0]!) ?? [];
      expect([api, metrics].map(Number).filter((p) => p > 0 && p !== heldPort && p !== otherPort)).toHaveLength(2);
      expect(existsSync(dir)).toBe(false);
    } finally {
      await new Promise((r) => other.close(r));
    }
  });
});
