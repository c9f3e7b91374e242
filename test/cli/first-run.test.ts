/**
 * A newcomer's first start: the lines `inlet serve` prints say what to run next, and the
 * commands run as printed (fault: the start-up lines named the console and the data, and
 * nothing of the project, source, key and account to make before the first request).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { tempDir } from '../helpers/fixture.js';
import { startServer, stopServer } from '../helpers/process.js';

const tmp = tempDir('inlet-first-run-');
afterAll(() => tmp.remove());

/** The store settings of the test's own environment left out: only what a test names counts. */
const NO_STORE_SETTINGS = { INLET_DATABASE_URL: '', INLET_DATA_DIR: '' };

/** Runs one printed line in a shell, in the directory the server runs in (where ./bin/inlet is). */
function sh(line: string, env: Record<string, string> = {}): string {
  const r = spawnSync('sh', ['-c', line], { cwd: process.cwd(), env: { ...process.env, ...NO_STORE_SETTINGS, ...env }, encoding: 'utf8' });
  expect(r.status, `${line}\n${r.stderr}`).toBe(0);
  return r.stdout;
}

/** The lines after the reference line, up to the end of what the start printed. */
async function startLines(dir: string): Promise<string[]> {
  const server = await startServer([], { ...NO_STORE_SETTINGS, INLET_DATA_DIR: dir });
  try {
    // The hints come in the same write as the reference line.
    await vi.waitFor(() => expect(server.stdout()).toContain('reference: '), { timeout: 10_000 });
    const lines = server.stdout().split('\n');
    return lines.slice(lines.findIndex((l) => l.startsWith('reference: ')) + 1).filter((l) => l !== '');
  } finally {
    await stopServer(server);
  }
}

describe('inlet serve on a store without a project', () => {
  it('lists the next commands with --data-dir filled in, and each works as printed; once there is a project it lists none', async () => {
    const dir = join(tmp.dir, 'served here');
    const lines = await startLines(dir);
    const commands = lines.slice(1).map((l) => l.trim().replace(/ {2,}# .*$/, ''));
    const at = `--data-dir '${dir}'`;
    expect(lines[0]).toBe('next, in another terminal from this directory:');
    expect(commands).toEqual([
      `./bin/inlet project create --name "My app" --api-enabled ${at}`,
      `./bin/inlet source create --project PROJECT --name "Billing jobs" ${at}`,
      `./bin/inlet key create --source SOURCE ${at}`,
      `printf '%s' "$PASSWORD" | ./bin/inlet user create --email you@example.com --admin --password-stdin ${at}`,
    ]);

    const project = /created project (prj_\w+)/.exec(sh(commands[0]!))![1]!;
    const source = /created source (src_\w+)/.exec(sh(commands[1]!.replace('PROJECT', project)))![1]!;
    expect(sh(commands[2]!.replace('SOURCE', source))).toMatch(/srv_live_\w{32}/);
    expect(sh(commands[3]!, { PASSWORD: 'correct horse battery' })).toMatch(/created admin account usr_\w+ \(you@example\.com\)/);

    expect(await startLines(dir)).toEqual([]);
    // Two starts and four commands, each a process of its own: more than the default on a busy machine.
  }, 180_000);
});
