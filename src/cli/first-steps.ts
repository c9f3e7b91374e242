import { resolve } from 'node:path';
import { SETTINGS } from '../settings.js';

/** What the first steps depend on: where the store is, what it holds, and how the command is called. */
export interface FirstStepsFacts {
  dataDir: string;
  databaseUrl: string | null;
  hasProject: boolean;
  hasUser: boolean;
  /** How to call inlet from the directory the server runs in, e.g. `./bin/inlet`. */
  command: string;
  cwd: string;
}

/** A word as a POSIX shell reads it back unchanged: quoted only when it needs to be. */
export function shellWord(s: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;
}

/**
 * The lines `inlet serve` prints after its URLs on a store that holds no project yet: the
 * commands that make a project, a source and a key (and a console account when there is none),
 * with --data-dir given when the server's is not the default. Empty once there is a project,
 * so a server in production prints none of it.
 */
export function firstSteps(f: FirstStepsFacts): string {
  if (f.hasProject) return '';
  const onDefaultDir = resolve(f.cwd, f.dataDir) === resolve(f.cwd, SETTINGS.dataDir.fallback);
  const dir = f.databaseUrl !== null || onDefaultDir ? '' : ` --data-dir ${shellWord(resolve(f.cwd, f.dataDir))}`;
  const c = f.command;
  const lines = [`next, in another terminal from this directory${f.databaseUrl !== null ? ', with the same INLET_DATABASE_URL' : ''}:`];
  lines.push(
    `  ${c} project create --name "My app" --api-enabled${dir}`,
    `  ${c} source create --project PROJECT --name "Billing jobs"${dir}    # PROJECT: the prj_… id printed`,
    `  ${c} key create --source SOURCE${dir}    # SOURCE: the src_… id printed; the key is shown once`,
  );
  if (!f.hasUser) {
    lines.push(`  printf '%s' "$PASSWORD" | ${c} user create --email you@example.com --admin --password-stdin${dir}    # to sign in to the console`);
  }
  return `${lines.join('\n')}\n`;
}
