import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { registerAdminCommands } from './commands/admin-commands.js';
import { registerBackup } from './commands/backup-command.js';
import { registerDataCommands } from './commands/data-commands.js';
import { registerOutcomeCommands } from './commands/outcome-commands.js';
import { registerDestinationCommands } from './commands/destination-commands.js';
import { registerGroupCommands } from './commands/group-commands.js';
import { registerSend } from './commands/send-command.js';
import { registerServe } from './commands/serve.js';
import { registerUserCommands } from './commands/user-commands.js';
import { isClosedPipe } from './context.js';
import { addExamples } from './examples.js';
import { commandName } from './command-name.js';

// dist/cli/main.js and src/cli/main.ts both sit two folders below package.json.
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/** The whole `inlet` command; docs/cli.md documents every command and option of it (a test checks). */
export const program = new Command('inlet')
  .version(version, '--version', 'print the version')
  .description('Inlet: server-side event collection. Serve the batch API and administer what it serves.')
  .showHelpAfterError()
  .configureOutput({ outputError: (s, write) => write(`inlet: ${s.replace(/^error: /, '')}`) });

registerServe(program);
registerAdminCommands(program);
registerDataCommands(program);
registerOutcomeCommands(program);
registerDestinationCommands(program);
registerGroupCommands(program);
registerUserCommands(program);
registerSend(program);
registerBackup(program);
// Last, once every command exists: each --help ends with its examples.
addExamples(program, commandName(process.argv[1], process.cwd()));

/** Runs the command line of this process; bin/inlet calls it. */
export async function run(): Promise<void> {
  // A closed stdout ends the output, quietly and with exit 0, as for any tool in a pipe; a command
  // that writes more sees the stream destroyed and stops. Any other write error stays a failure.
  process.stdout.on('error', (e) => {
    if (!isClosedPipe(e)) throw e;
  });
  await program.parseAsync(process.argv);
}
