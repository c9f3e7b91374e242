/**
 * Fault 20: a newcomer without PostgreSQL and Redis could not get a green
 * `npm test`. Outside CI, the suites that need a missing service are skipped
 * and named in one line that says how to start it; under CI=true they fail.
 * Checked by running vitest itself on a suite that needs PostgreSQL, pointed
 * at ports nothing listens on.
 */
import { spawn } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VITEST = fileURLToPath(new URL('../node_modules/vitest/vitest.mjs', import.meta.url));
const SUITE = 'test/process/postgres-outage.test.ts';

/** A port on 127.0.0.1 that nothing listens on. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Runs vitest on SUITE in a child process with `env` over a copy of ours, without this run's own vitest settings. */
async function runSuite(env: Record<string, string | undefined>): Promise<{ code: number | null; out: string }> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VITEST') && k !== 'CI' && k !== 'NODE_ENV'));
  const port = await closedPort();
  const child = spawn(process.execPath, [VITEST, 'run', SUITE, '--color=false'], {
    cwd: ROOT,
    env: { ...base, INLET_TEST_DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/none`, INLET_TEST_REDIS_URL: `redis://127.0.0.1:${port}`, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, out };
}

describe('fault 20: tests that need a missing service', () => {
  it('outside CI are skipped, with one line naming them and saying how to start the service', async () => {
    const { code, out } = await runSuite({});
    expect(code, out).toBe(0);
    const lines = out.split('\n').filter((l) => l.startsWith('Skipped '));
    expect(lines, out).toHaveLength(1);
    expect(lines[0]).toContain(`"PostgreSQL stops and starts again under load" (${SUITE})`);
    expect(lines[0]).toMatch(/PostgreSQL does not answer at postgres:\/\/postgres@127\.0\.0\.1:\d+\/none \(.*ECONNREFUSED.*\); start it \(.*\) or point INLET_TEST_DATABASE_URL at one/);
    expect(lines[0]).toContain('With CI=true they fail instead.');
  });

  it('under CI=true fail, saying which service is missing', async () => {
    const { code, out } = await runSuite({ CI: 'true' });
    expect(code, out).not.toBe(0);
    expect(out).toContain('PostgreSQL is not reachable at');
    expect(out).not.toMatch(/^Skipped /m);
  });
});

describe('fault 20: every suite that reaches PostgreSQL or Redis can be skipped', () => {
  it('a test file that opens a database or a Redis declares the service (describeWith, or an engine that needs it)', () => {
    const files = ['src', 'test', 'bench']
      .flatMap((dir) => readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' }).map((f) => join(dir, f)))
      .filter((f) => f.endsWith('.test.ts') && f !== join('test', 'services-skip.test.ts'));
    const reaches = /createTestDatabase\(|requireRedis\(|new RedisLimiter\(|PostgresStore\.connect\(|TEST_REDIS_URL|TEST_DATABASE_URL/;
    const declares = /describeWith\(|needs: \[|\bSTORES\b/;
    const undeclared = files.filter((f) => {
      const text = readFileSync(join(ROOT, f), 'utf8');
      return reaches.test(text) && !declares.test(text);
    });
    expect(files.length).toBeGreaterThan(20);
    expect(undeclared).toEqual([]);
  });
});
