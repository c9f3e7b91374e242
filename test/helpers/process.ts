import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config.js';
import { openStore } from '../../src/stores/open-store.js';
import { createAdmin } from '../../src/domain/admin.js';
import { orgJson, projectJson, sourceJson } from '../../src/cli/views.js';

export const BIN = fileURLToPath(new URL('../../bin/inlet', import.meta.url));

/** A port of 127.0.0.1 free a moment ago (another process may take it before it is used). */
export async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', () => r()));
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((r) => probe.close(r));
  return port;
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `bin/inlet` to completion; `input`, when given, is its stdin. The store it names is made first, as `inlet serve` would. */
export async function runCli(args: string[], env: Record<string, string> = {}, input?: string): Promise<CliResult> {
  await ensureStore(args, env);
  return runNode([BIN, ...args], env, input);
}

/** Runs `bin/inlet` as it is: a command on a store nobody made meets no store. */
export function runCliAsIs(args: string[], env: Record<string, string> = {}, input?: string): Promise<CliResult> {
  return runNode([BIN, ...args], env, input);
}

const made = new Set<string>();

/**
 * Commands other than serve work on an existing store only; a user makes it
 * by starting `inlet serve` once. Tests that provision before they serve get
 * it made here, in process, by the same code.
 */
export async function ensureStore(args: string[], env: Record<string, string>): Promise<void> {
  if (args.length === 0 || ['serve', 'send', 'help'].includes(args[0]!) || args.some((a) => a === '--help' || a === '-h' || a === '--version')) return;
  const at = args.indexOf('--data-dir');
  let cfg: ReturnType<typeof loadConfig>;
  try {
    cfg = loadConfig({ ...process.env, ...env }, { dataDir: at >= 0 ? args[at + 1] : undefined });
  } catch {
    return; // Settings the command is meant to refuse: it says so itself.
  }
  const where = cfg.databaseUrl ?? cfg.dataDir;
  if (made.has(where)) return;
  made.add(where);
  try {
    await (await openStore(cfg)).close();
  } catch {
    // A store that cannot be reached is the command's to report.
  }
}

/** Runs `node ARGS` to completion, with `input` on its stdin when given. */
export function runNode(args: string[], env: Record<string, string> = {}, input?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    if (input !== undefined) p.stdin!.end(input);
    let stdout = '';
    let stderr = '';
    p.stdout!.on('data', (d) => (stdout += d));
    p.stderr!.on('data', (d) => (stderr += d));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Runs `bin/inlet … --json` and parses its one JSON value, failing loudly otherwise. */
export const cliJson = jsonOf(runCli);

/** `run` of a command with --json, parsing its one JSON value and failing loudly otherwise. */
export function jsonOf(run: (args: string[], env: Record<string, string>) => Promise<CliResult>) {
  return async <T = any>(args: string[], env: Record<string, string> = {}): Promise<T> => {
    const r = await run([...args, '--json'], env);
    if (r.code !== 0) throw new Error(`inlet ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
    return JSON.parse(r.stdout) as T;
  };
}

export interface Server {
  url: string;
  proc: ChildProcess;
  exited: Promise<number | null>;
  stderr: () => string;
  stdout: () => string;
}

/** Starts `inlet serve --port 0` and waits for its "listening" line. */
export function startServer(args: string[], env: Record<string, string> = {}): Promise<Server> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [BIN, 'serve', '--port', '0', ...args], {
      // No metrics listener unless asked: servers of parallel tests would share its port.
      env: { ...process.env, INLET_LOG_LEVEL: 'warn', INLET_METRICS_PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    const exited = new Promise<number | null>((r) => proc.on('exit', (code) => r(code)));
    proc.stderr!.on('data', (d) => (err += d));
    proc.stdout!.on('data', (d) => {
      out += d;
      const m = /inlet listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ url: m[1]!, proc, exited, stderr: () => err, stdout: () => out });
    });
    proc.on('exit', (code) => reject(new Error(`inlet serve exited ${code} before listening: ${err}`)));
  });
}

/** Creates org, project (API on), source and key through the command; returns ids and the key. */
/**
 * An organization, a project with the API on, a source and its key, as
 * `org create`, `project create --api-enabled`, `source create` and `key
 * create` make them and print them with `--json`. Made in process, by the
 * code those commands run, on the store they would open: four spawns of the
 * CLI cost seconds of start-up each on a busy machine, and tests that set up
 * this way are not about the CLI (test/cli runs those commands themselves).
 */
export function provision(env: Record<string, string>, dataDir?: string) {
  return withAdmin(env, dataDir, async (admin) => {
    const org = orgJson(await admin.createOrg('Acme'));
    const project = projectJson(await admin.createProject({ name: 'Web', orgId: org.id, apiEnabled: true }));
    const source = sourceJson(await admin.createSource({ projectId: project.id, name: 'Billing' }));
    const key = await admin.createKey(source.id);
    return { org, project, source, key };
  });
}

/**
 * Runs `work` on the store `inlet` would open with `env` and `--data-dir
 * dataDir`, as the commands do, and gives back its result through JSON, as
 * `--json` prints it. For setting up; no server may hold an embedded store then.
 */
export async function withAdmin<T>(env: Record<string, string>, dataDir: string | undefined, work: (admin: ReturnType<typeof createAdmin>) => Promise<T>): Promise<any> {
  const cfg = loadConfig({ ...process.env, ...env }, { dataDir });
  made.add(cfg.databaseUrl ?? cfg.dataDir);
  const store = await openStore(cfg);
  try {
    return JSON.parse(JSON.stringify(await work(createAdmin(store, Date.now))));
  } finally {
    await store.close();
  }
}

/** provision through `json` (a cliJson). */
export function provisionOf(json: ReturnType<typeof jsonOf>) {
  return async (env: Record<string, string>, dataDir?: string) => {
    const dd = dataDir ? ['--data-dir', dataDir] : [];
    const org = await json(['org', 'create', '--name', 'Acme', ...dd], env);
    const project = await json(['project', 'create', '--name', 'Web', '--org', org.id, '--api-enabled', ...dd], env);
    const source = await json(['source', 'create', '--project', project.id, '--name', 'Billing', ...dd], env);
    const key = await json(['key', 'create', '--source', source.id, ...dd], env);
    return { org, project, source, key };
  };
}

/** Stops a server with SIGTERM (SIGKILL after 10 s) and waits for it to exit. */
export async function stopServer(s: Server): Promise<void> {
  if (s.proc.exitCode !== null || s.proc.signalCode !== null) return;
  s.proc.kill('SIGTERM');
  const force = setTimeout(() => s.proc.kill('SIGKILL'), 10_000);
  await s.exited;
  clearTimeout(force);
}

/** Bytes of request bodies a server is reading now, from its metrics listener on `metricsPort`. */
export async function readingBytes(metricsPort: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  return Number(/^inlet_body_bytes\{state="reading"\} (\d+)/m.exec(text)![1]);
}
