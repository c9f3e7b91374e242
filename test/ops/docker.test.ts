/**
 * The Dockerfile and compose.yaml, as far as this machine can check them without Docker: the
 * image's command, settings and health check are run here against a volume of the test's own,
 * and compose.yaml is read for the services that make several servers.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { tempDir } from '../helpers/fixture.js';
import { freePort } from '../helpers/process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Instruction {
  op: string;
  args: string;
}

/** The Dockerfile's instructions, continuation lines joined and comments left out. */
function instructions(text: string): Instruction[] {
  const joined = text.split('\n').filter((l) => !l.trimStart().startsWith('#')).join('\n').replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .map((l) => {
      const [op, ...rest] = l.split(/\s+/);
      return { op: op!.toUpperCase(), args: rest.join(' ') };
    });
}

const all = instructions(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'));
// What the image runs with is the last stage's.
const stage = all.slice(all.map((i) => i.op).lastIndexOf('FROM'));
const one = (op: string): string => {
  const found = stage.filter((i) => i.op === op);
  expect(found, op).toHaveLength(1);
  return found[0]!.args;
};

const workdir = one('WORKDIR');
const volume = JSON.parse(one('VOLUME')) as string[];
const env: Record<string, string> = Object.fromEntries(
  stage.filter((i) => i.op === 'ENV').flatMap((i) => [...i.args.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!])),
);
const command = JSON.parse(one('CMD')) as string[];
const healthcheck = /^(.*?)\s*CMD\s+(\[.*\])$/.exec(one('HEALTHCHECK'))!;
const healthCommand = JSON.parse(healthcheck[2]!) as string[];

const tmp = tempDir('inlet-docker-');
afterAll(() => tmp.remove());

/** The image's paths on this machine: the repository stands for WORKDIR, a directory of the test's own for the volume. */
function here(value: string, volumeDir: string): string {
  return value.replaceAll(workdir, ROOT.replace(/\/$/, '')).replaceAll(volume[0]!, volumeDir).replace('$PATH', process.env.PATH ?? '');
}

/** A command's file as the image's PATH finds it. */
function onPath(name: string, path: string): string {
  const found = path.split(':').map((dir) => join(dir, name)).find((f) => existsSync(f));
  expect(found, `${name} on ${path}`).toBeDefined();
  return found!;
}

function healthy(envHere: Record<string, string>): number | null {
  return spawnSync(onPath(healthCommand[0]!, envHere.PATH!), healthCommand.slice(1), { cwd: ROOT, env: envHere, encoding: 'utf8', timeout: 10_000 }).status;
}

describe('the Dockerfile', () => {
  it('builds on Node.js 20 slim and runs as a user other than root, with the data in a volume', () => {
    for (const from of all.filter((i) => i.op === 'FROM')) expect(from.args).toMatch(/^node:20(\.\d+)*-slim\b/);
    expect(one('USER')).toMatch(/^(?!root\b|0\b)\w+/);
    expect(volume).toHaveLength(1);
    expect(env.INLET_DATA_DIR).toBe(volume[0]);
    expect(command).toEqual(['inlet', 'serve', '--host', '0.0.0.0']);
    expect(healthcheck[1]).toMatch(/--interval=\d+s/);
    expect(healthCommand.join(' ')).toContain('/healthz');
  });

  it("its command and settings serve here, the data lands in the volume, and its health check passes while it serves and fails once it stops", async () => {
    const volumeDir = join(tmp.dir, 'volume');
    const [port, metricsPort] = [await freePort(), await freePort()];
    const envHere: Record<string, string> = {
      ...(process.env as Record<string, string>),
      INLET_DATABASE_URL: '',
      INLET_LOG_LEVEL: 'warn',
      ...Object.fromEntries(Object.entries(env).map(([k, v]) => [k, here(v, volumeDir)])),
      // What `docker run -e` would set: ports free on this shared machine. The health check reads INLET_PORT too.
      INLET_PORT: String(port),
      INLET_METRICS_PORT: String(metricsPort),
    };
    // `inlet` is found through the image's PATH, as in the image.
    const bin = onPath(command[0]!, envHere.PATH!);
    expect(bin).toBe(join(ROOT, 'bin', 'inlet'));
    const proc = spawn(bin, command.slice(1), { cwd: ROOT, env: envHere, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    proc.stderr.on('data', (d) => (err += d));
    const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
    try {
      await new Promise<void>((resolve, reject) => {
        proc.stdout.on('data', (d) => {
          out += d;
          if (out.includes('reference: ')) resolve();
        });
        proc.on('exit', (code) => reject(new Error(`exited ${code}: ${err}`)));
      });
      expect(out.split('\n')[0]).toBe(`inlet listening on http://0.0.0.0:${port}`);
      expect(out).toContain(`data: SQLite, ${join(volumeDir, 'inlet.db')} (new: created now)`);
      expect(existsSync(join(volumeDir, 'inlet.db'))).toBe(true);
      expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(200);
      expect(healthy(envHere)).toBe(0);
    } finally {
      proc.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(healthy(envHere)).toBe(1);
  });
});

describe('compose.yaml', () => {
  const compose = parseYaml(readFileSync(join(ROOT, 'compose.yaml'), 'utf8'), { merge: true }) as {
    services: Record<string, { build?: string; image?: string; environment?: Record<string, string>; depends_on?: Record<string, unknown>; ports?: string[] }>;
    volumes?: Record<string, unknown>;
  };
  const inlets = Object.entries(compose.services).filter(([, s]) => s.build === '.');

  it('runs several Inlet servers of this image on one PostgreSQL and one Redis', () => {
    expect(Object.keys(compose.services)).toEqual(expect.arrayContaining(['postgres', 'redis']));
    expect(compose.services.postgres!.image).toMatch(/^postgres:\d+/);
    expect(compose.services.redis!.image).toMatch(/^redis:\d+/);
    expect(inlets.length).toBeGreaterThanOrEqual(2);
    const published = new Set<string>();
    for (const [name, s] of inlets) {
      expect(s.environment?.INLET_DATABASE_URL, name).toMatch(/^postgres:\/\/inlet:\$\{POSTGRES_PASSWORD:\?[^}]+\}@postgres:5432\/inlet$/);
      expect(s.environment?.INLET_REDIS_URL, name).toBe('redis://redis:6379');
      expect(Object.keys(s.depends_on ?? {}).sort(), name).toEqual(['postgres', 'redis']);
      for (const p of s.ports ?? []) {
        expect(p, name).toMatch(/^127\.0\.0\.1:\d+:8080$/);
        published.add(p.split(':')[1]!);
      }
    }
    expect(published.size).toBe(inlets.length);
    expect(compose.volumes).toHaveProperty('pgdata');
  });
});
