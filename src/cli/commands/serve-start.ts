/**
 * What `inlet serve` does around the server (src/server.ts builds it): the
 * settings read, the lines printed once it listens, and the stop on SIGTERM
 * or SIGINT. Loaded only by that command.
 */
import { loadConfig } from '../../config.js';
import { startServer } from '../../server.js';
import { describeStore } from '../../stores/open-store.js';
import type { Store } from '../../stores/port.js';
import { commandName } from '../command-name.js';
import { exitOnFatalErrors } from '../fatal-errors.js';
import { firstSteps } from '../first-steps.js';
import { limitHeapGrowth } from '../heap-growth.js';
import { bracketed } from '../serve-ports.js';
import { cliIo } from '../io.js';

/** Starts the server with these flags (and the environment) and serves until SIGTERM or SIGINT. */
export async function serve(flags: Record<string, string | undefined>): Promise<void> {
  exitOnFatalErrors('server');
  limitHeapGrowth();
  const io = cliIo();
  const cfg = loadConfig(io.env, flags);
  const server = await startServer(cfg, {
    listening: async ({ app, port, store, storeIsNew }) => {
      io.stdout.write(`inlet listening on http://${bracketed(cfg.host)}:${port}\n`);
      // After the line above, which scripts wait for: where the data is, so a command run elsewhere can be pointed at it.
      const base = app.inletBaseUrl.replace(/\/+$/, '');
      // Then what to run next while the store is empty, in the same write: a reader that has the
      // reference line has them too.
      const next = firstSteps({ ...cfg, ...(await storeHolds(store)), command: commandName(io.script, io.cwd), cwd: io.cwd });
      io.stdout.write(`data: ${describeStore(cfg)}${storeIsNew ? ' (new: created now)' : ''}\nconsole: ${base}/console\nreference: ${base}/docs/api\n${next}`);
    },
  });
  // A second signal cuts the drain short; the first one's stop ends the process.
  let stopping = false;
  const stop = (signal: string): void => {
    const first = !stopping;
    stopping = true;
    void server.stop(signal).then(() => first && process.exit(0));
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/** Whether the store holds a project and a console account yet; a store that cannot tell is taken to hold both (no hints). */
async function storeHolds(store: Store): Promise<{ hasProject: boolean; hasUser: boolean }> {
  try {
    const [projects, users] = await Promise.all([store.listings.listProjects(null), store.accounts.listUsers()]);
    return { hasProject: projects.length > 0, hasUser: users.length > 0 };
  } catch {
    return { hasProject: true, hasUser: true };
  }
}
