import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { registerAdminCommands } from './commands/admin-commands.js';
import { registerBackup } from './commands/backup-command.js';
import { registerDataCommands } from './commands/data-commands.js';
import { registerOutcomeCommands } from './commands/outcome-commands.js';
import { registerDestinationCommands } from './commands/destination-commands.js';
import { registerGroupCommands } from './commands/group-commands.js';
import { registerPlanCommands } from './commands/plan-commands.js';
import { registerSend } from './commands/send-command.js';
import { registerServe } from './commands/serve.js';
import { registerUserCommands } from './commands/user-commands.js';
import { isClosedPipe } from './context.js';
import { addExamples } from './examples.js';
import { commandName } from './command-name.js';
import { type CliIo, processIo, setExitCode, withIo } from './io.js';

// dist/cli/main.js and src/cli/main.ts both sit two folders below package.json.
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/**
 * The whole `inlet` command, made afresh for each run (commander keeps what it parsed);
 * docs/cli.md documents every command and option of it (a test checks). Its help and usage
 * errors go to `io`'s streams, and it throws instead of ending the process.
 */
export function makeProgram(io: CliIo): Command {
  const program = new Command('inlet')
    .version(version, '--version', 'print the version')
    // `inlet --version` is the program's; after a command, --version is that command's own (plan pull, show, test).
    .enablePositionalOptions()
    .description('Inlet: server-side event collection. Serve the batch API and administer what it serves.')
    .showHelpAfterError()
    .exitOverride()
    .configureOutput({
      writeOut: (s) => io.stdout.write(s),
      writeErr: (s) => io.stderr.write(s),
      // A terminal's width, else commander's own default of 80.
      getOutHelpWidth: () => (io.stdout.isTTY ? io.stdout.columns : undefined) ?? 80,
      getErrHelpWidth: () => (io.stderr.isTTY ? io.stderr.columns : undefined) ?? 80,
      outputError: (s, write) => write(`inlet: ${s.replace(/^error: /, '')}`),
    });
  registerServe(program);
  registerAdminCommands(program);
  registerDataCommands(program);
  registerOutcomeCommands(program);
  registerDestinationCommands(program);
  registerGroupCommands(program);
  registerPlanCommands(program);
  registerUserCommands(program);
  registerSend(program);
  registerBackup(program);
  // Last, once every command exists: each --help ends with its examples.
  addExamples(program, commandName(io.script, io.cwd));
  return program;
}

/** The command as this process would run it (its help and options are what docs/cli.md describes). */
export const program = makeProgram(processIo());

/**
 * Runs one `inlet` command line (the words after `inlet`) on `io` and resolves to its exit
 * status; nothing of it outlives the command but what it wrote.
 */
export async function runCommand(args: string[], io: CliIo): Promise<number> {
  return withIo(io, () => parseLine(args, io));
}

async function parseLine(args: string[], io: CliIo): Promise<void> {
  try {
    await makeProgram(io).parseAsync(args, { from: 'user' });
  } catch (e) {
    // Help, --version and usage errors: commander has written what it had to say.
    if (!(e instanceof CommanderError)) throw e;
    setExitCode(e.exitCode);
  }
}

/** Runs the command line of this process; bin/inlet calls it. */
export async function run(): Promise<void> {
  // A closed stdout ends the output, quietly and with exit 0, as for any tool in a pipe; a command
  // that writes more sees the stream destroyed and stops. Any other write error stays a failure.
  process.stdout.on('error', (e) => {
    if (!isClosedPipe(e)) throw e;
  });
  // Not through withIo: an AsyncLocalStorage in use turns on Node's promise hooks, and `inlet serve`
  // would pay for them on every promise of every request. Outside withIo, commands use the process's io.
  await parseLine(process.argv.slice(2), processIo());
}
