import type { Command } from 'commander';
import { SETTINGS, type SettingSpec } from '../../settings.js';
import { fail } from '../context.js';

/** `inlet serve`: the batch API until SIGTERM or SIGINT. */
export function registerServe(program: Command): void {
  const cmd = program.command('serve').description('serve the batch API');
  const envOnly: SettingSpec<unknown>[] = [];
  for (const s of Object.values(SETTINGS) as SettingSpec<unknown>[]) {
    if (s.flag === undefined) envOnly.push(s);
    else cmd.option(s.flag, `${s.about} [env ${s.env}; default ${s.shown}; ${s.accepts}]`);
  }
  const envHelp = envOnly.map((s) => `  ${s.env}  [default ${s.shown}; ${s.accepts}]\n      ${s.about}`);
  cmd.addHelpText('after', `\nEnvironment variables (each option above has one too; docs/settings.md lists them all):\n${envHelp.join('\n')}\n`);
  cmd.action(async (o: Record<string, string | undefined>) => {
    try {
      // The server's code is loaded only by the command that runs it: every
      // other command starts without it (about a third of a CLI call's start).
      const { serve } = await import('./serve-start.js');
      await serve(o);
    } catch (e) {
      // Whatever opened before the failure (a pool, a Redis client) must not keep the process alive.
      process.exit(fail(e));
    }
  });
}

