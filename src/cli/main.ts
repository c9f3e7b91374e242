import { Command } from 'commander';
import { registerAdminCommands } from './commands/admin-commands.js';
import { registerDataCommands } from './commands/data-commands.js';
import { registerServe } from './commands/serve.js';

/** The whole `inlet` command; docs/cli.md documents every command and option of it (a test checks). */
export const program = new Command('inlet')
  .description('Inlet: server-side event collection. Serve the batch API and administer what it serves.')
  .showHelpAfterError()
  .configureOutput({ outputError: (s, write) => write(`inlet: ${s.replace(/^error: /, '')}`) });

registerServe(program);
registerAdminCommands(program);
registerDataCommands(program);

/** Runs the command line of this process; bin/inlet calls it. */
export async function run(): Promise<void> {
  await program.parseAsync(process.argv);
}
