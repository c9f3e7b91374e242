/**
 * `node provision-batch.js --checkout DIR --data-dir DIR --tenants N`: makes
 * one organization and N projects with the API on, each with a source and a
 * key, through the `inlet` command of the checkout, and prints them as JSON.
 *
 * Each `inlet` process spends about half a second of CPU loading the program,
 * so 1 + 3N of them would take most of a minute on two cores. This script
 * loads the checkout's program a few times over (one copy per lane, as a
 * program holds one parse at a time) and runs every command line through it,
 * exactly as `bin/inlet … --json` would (same parsing, same store opening,
 * same JSON on stdout, told apart by lane). A checkout whose program is not
 * exported is driven through `bin/inlet` instead, a few processes at a time.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { args } from './rows.js';
import type { Tenant } from './tenants.js';

type Cli = (argv: string[]) => Promise<Record<string, string>>;

const a = args(process.argv.slice(2));
const checkout = a.get('checkout')!;
const dataDir = a.get('data-dir')!;
const count = Number(a.get('tenants') ?? 1);

/** What each lane's command wrote, told apart by the async context the command runs in. */
const lane = new AsyncLocalStorage<{ out: string; err: string }>();
function capture(stream: NodeJS.WriteStream, field: 'out' | 'err'): void {
  const write = stream.write.bind(stream) as (chunk: string | Uint8Array) => boolean;
  stream.write = ((chunk: string | Uint8Array) => {
    const l = lane.getStore();
    if (l === undefined) return write(chunk);
    l[field] += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    return true;
  }) as typeof stream.write;
}
capture(process.stdout, 'out');
capture(process.stderr, 'err');

const LANES = 4;
await makeStore(checkout, dataDir);
const programs = await Promise.all(Array.from({ length: LANES }, (_, i) => loadProgram(checkout, i)));
const inProc = programs.every((p) => p !== null);
const clis: Cli[] = programs.map((p) => (inProc ? inProcess(p!, dataDir) : spawned(checkout, dataDir)));
const org = await clis[0]!(['org', 'create', '--name', 'Bench']);
const make = async (cli: Cli, i: number): Promise<Tenant> => {
  const project = await cli(['project', 'create', '--name', `Bench ${i}`, '--org', org.id!, '--api-enabled']);
  const source = await cli(['source', 'create', '--project', project.id!, '--name', `Bench ${i}`]);
  const key = await cli(['key', 'create', '--source', source.id!]);
  return { key: key.key!, projectId: project.id!, sourceId: source.id! };
};
const tenants: Tenant[] = [];
for (let i = 0; i < count; i += LANES) {
  tenants.push(...(await Promise.all(clis.slice(0, Math.min(LANES, count - i)).map((cli, j) => make(cli, i + j)))));
}
process.stdout.write(`${JSON.stringify({ tenants, inProcess: inProc })}\n`);
process.exit(0);

/**
 * Makes the store as `inlet serve` would on its first start: the admin
 * commands work on an existing store only. Opened through the checkout's own
 * code, so each side of an A/B gets its own schema.
 */
async function makeStore(root: string, dir: string): Promise<void> {
  const m = (await import(pathToFileURL(join(root, 'dist', 'stores', 'open-store.js')).href)) as {
    openStore: (cfg: { dataDir: string; databaseUrl: string | null }) => Promise<{ close(): Promise<void> }>;
  };
  const store = await m.openStore({ dataDir: dir, databaseUrl: process.env.INLET_DATABASE_URL ?? null });
  await store.close();
}

interface Program {
  parseAsync: (argv: string[]) => Promise<unknown>;
}

/** A copy of the checkout's program of its own (the query makes the module load again). */
async function loadProgram(root: string, lane: number): Promise<Program | null> {
  try {
    const m = (await import(`${pathToFileURL(join(root, 'dist', 'cli', 'main.js')).href}?lane=${lane}`)) as { program?: Program };
    return typeof m.program?.parseAsync === 'function' ? m.program : null;
  } catch {
    return null;
  }
}

function inProcess(p: Program, dir: string): Cli {
  return async (argv) => {
    const l = { out: '', err: '' };
    await lane.run(l, () => p.parseAsync(['node', 'inlet', ...argv, '--data-dir', dir, '--json']));
    // A refusal is a sentence on stderr (and an exit status, which lanes would share).
    if (l.err !== '') throw new Error(`inlet ${argv.join(' ')} failed: ${l.err.trim()}`);
    return JSON.parse(l.out) as Record<string, string>;
  };
}

function spawned(root: string, dir: string): Cli {
  return (argv) =>
    new Promise((resolve, reject) => {
      const proc = spawn(process.execPath, [join(root, 'bin', 'inlet'), ...argv, '--data-dir', dir, '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      let err = '';
      proc.stdout.on('data', (d) => (out += d));
      proc.stderr.on('data', (d) => (err += d));
      proc.on('error', reject);
      proc.on('exit', (code) => {
        if (code !== 0) return reject(new Error(`inlet ${argv.join(' ')} exited ${code}: ${err}`));
        try {
          resolve(JSON.parse(out) as Record<string, string>);
        } catch (e) {
          reject(new Error(`inlet ${argv.join(' ')} printed no JSON (${(e as Error).message}): ${out}`));
        }
      });
    });
}
