import type { Command } from 'commander';
import { createAccounts } from '../../domain/accounts/accounts.js';
import { UsageError, runWithStore, withCommon } from '../context.js';

/** Reads the whole of stdin, without its final line break. */
async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) throw new UsageError('Give the password on stdin, e.g. printf %s "$PASSWORD" | inlet user create … --password-stdin.');
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

/** `inlet user create`: console accounts. */
export function registerUserCommands(program: Command): void {
  const user = program.command('user').description('console accounts');
  withCommon(
    user
      .command('create')
      .description('create a console account (the password is read from stdin, at least 12 characters)')
      .requiredOption('--email <email>', 'its email, used to sign in')
      .option('--admin', 'sees every organization')
      .option('--org <org>', 'an organization it is a member of (repeat for several)', (v: string, all: string[]) => [...all, v], [] as string[])
      .option('--password-stdin', 'read the password from stdin (required)'),
  ).action((o) =>
    runWithStore(
      o,
      async ({ store }) => {
        if (o.passwordStdin !== true) throw new UsageError('Give --password-stdin and the password on stdin; it is never taken as a flag.');
        const password = await readStdin();
        return createAccounts(store, Date.now).createUser({ email: o.email, password, admin: o.admin === true, orgIds: o.org });
      },
      (r) => `created ${r.admin ? 'admin ' : ''}account ${r.id} (${r.email})${r.orgs.length > 0 ? ` in ${r.orgs.join(', ')}` : ''}`,
    ),
  );
}
