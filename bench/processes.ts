import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout this benchmark was built from (dist/bench/bench/ is three folders below it). */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** A script compiled beside this one (the baselines). */
export function benchScript(name: string): string {
  return fileURLToPath(new URL(`./${name}`, import.meta.url));
}

const children = new Set<ChildProcess>();

// Whatever way the run ends, nothing it started may outlive it.
process.once('exit', () => {
  for (const c of children) if (c.exitCode === null && c.pid !== undefined) process.kill(c.pid, 'SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`\nbench: ${signal}, stopping what it started\n`);
    process.exit(130);
  });
}

export interface Listening {
  url: string;
  proc: ChildProcess;
  pid: number;
  stderr: () => string;
}

/**
 * Starts a node process that prints "… listening on http://…" once ready.
 * Its stderr is kept (the server logs at warn) and shown if it dies.
 */
export function startListening(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 30_000): Promise<Listening> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(proc);
    let out = '';
    let err = '';
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${args.join(' ')} did not listen within ${timeoutMs} ms: ${err}`));
    }, timeoutMs);
    proc.stderr!.on('data', (d) => {
      // Bounded: a server that logs every request must not grow the bench's memory.
      if (process.env.BENCH_SERVER_STDERR) process.stderr.write(d);
      if (err.length < 64 * 1024) err += d;
    });
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m !== null) {
        clearTimeout(timer);
        resolve({ url: m[1]!, proc, pid: proc.pid!, stderr: () => err });
      }
    });
    proc.on('exit', (code) => {
      children.delete(proc);
      clearTimeout(timer);
      reject(new Error(`${args.join(' ')} exited ${code} before listening: ${err}`));
    });
  });
}

/** SIGTERM, then SIGKILL if it has not exited in time; resolves with the exit code. */
export function stopProcess(proc: ChildProcess, graceMs = 20_000): Promise<number | null> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve(proc.exitCode);
  return new Promise((resolve) => {
    const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      children.delete(proc);
      resolve(code);
    });
    proc.kill('SIGTERM');
  });
}

/** Runs a node script to completion and parses the one JSON value it prints. */
export async function runJson<T>(args: string[], env: NodeJS.ProcessEnv): Promise<T> {
  const out = await runText(args, env);
  try {
    return JSON.parse(out) as T;
  } catch (e) {
    throw new Error(`${args.join(' ')} printed no JSON (${(e as Error).message}): ${out}`);
  }
}

/** Runs a node script to completion; what it printed to stdout. */
export function runText(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(proc);
    let out = '';
    let err = '';
    proc.stdout!.on('data', (d) => (out += d));
    proc.stderr!.on('data', (d) => (err += d));
    proc.on('error', reject);
    proc.on('exit', (code) => {
      children.delete(proc);
      if (code !== 0) return reject(new Error(`${args.join(' ')} exited ${code}: ${err}`));
      resolve(out);
    });
  });
}

/** A server of a checkout on a fresh embedded store, with a project, a source and a key made by its CLI. */
export interface KeyedServer {
  server: Listening;
  projectId: string;
  key: string;
  /** Runs the checkout's CLI on the server's store; the one JSON value it prints. */
  cli: <T>(args: string[]) => Promise<T>;
  /** Stops the server and removes its store. */
  stop: () => Promise<void>;
}

/**
 * Starts `checkout`'s server on a fresh store in a temporary directory (no
 * PostgreSQL, no Redis, limits off, warnings only; `env` added), with a CPU
 * profile in BENCH_CPU_PROF when set, and makes an org, a project, a source
 * and a key.
 */
export async function startKeyedServer(checkout: string, name: string, env: NodeJS.ProcessEnv = {}): Promise<KeyedServer> {
  const bin = join(checkout, 'bin/inlet');
  const dir = mkdtempSync(join(tmpdir(), `inlet-${name}-`));
  const all = {
    ...process.env, INLET_DATA_DIR: dir, INLET_DATABASE_URL: '', INLET_REDIS_URL: '', INLET_LOG_LEVEL: 'warn', INLET_METRICS_PORT: '0',
    INLET_LIMIT_BURST: '0', INLET_LIMIT_SUSTAINED: '0', INLET_LIMIT_KEY_RPS: '0', ...env,
  };
  const prof = process.env.BENCH_CPU_PROF;
  const server = await startListening([...(prof ? ['--cpu-prof', `--cpu-prof-dir=${prof}`] : []), bin, 'serve', '--port', '0'], all, 120_000);
  const stop = async () => {
    await stopProcess(server.proc);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const cli = <T>(args: string[]) => runJson<T>([bin, ...args, '--json'], all);
    const org = await cli<{ id: string }>(['org', 'create', '--name', 'Bench']);
    const project = await cli<{ id: string }>(['project', 'create', '--name', 'Web', '--org', org.id, '--api-enabled']);
    const source = await cli<{ id: string }>(['source', 'create', '--project', project.id, '--name', 'Server']);
    const key = await cli<{ key: string }>(['key', 'create', '--source', source.id]);
    return { server, projectId: project.id, key: key.key, cli, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
