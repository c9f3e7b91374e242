import type { Command } from 'commander';
import { createAccounts } from '../../domain/accounts/accounts.js';
import { type ChangeOutcome, type UserView, createUserAdmin } from '../../domain/accounts/user-admin.js';
import { deleted } from '../views.js';
import { UsageError, parseBool, runWithStore, table, withCommon } from '../context.js';
import { cliIo } from '../io.js';

/** Reads the whole of stdin, without its final line break. */
async function readStdin(command: string): Promise<string> {
  if (cliIo().stdin.isTTY) throw new UsageError(`Give the password on stdin, e.g. printf %s "$PASSWORD" | inlet user ${command} … --password-stdin.`);
  const chunks: Buffer[] = [];
  for await (const c of cliIo().stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

/** `inlet user create`, `list`, `update`, `delete`: console accounts. */
export function registerUserCommands(program: Command): void {
  const repeat = (v: string, all: string[]) => [...all, v];
  const user = program.command('user').description('console accounts');
  withCommon(
    user
      .command('create')
      .description('create a console account (the password is read from stdin, at least 12 characters)')
      .requiredOption('--email <email>', 'its email, used to sign in')
      .option('--admin', 'sees every organization')
      .option('--org <org>', 'an organization it is a member of (repeat for several)', repeat, [] as string[])
      .option('--password-stdin', 'read the password from stdin (required)'),
  ).action((o) =>
    runWithStore(
      o,
      async ({ store }) => {
        if (o.passwordStdin !== true) throw new UsageError('Give --password-stdin and the password on stdin; it is never taken as a flag.');
        const password = await readStdin('create');
        return createAccounts(store, Date.now).createUser({ email: o.email, password, admin: o.admin === true, orgIds: o.org });
      },
      (r) => `created ${r.admin ? 'admin ' : ''}account ${r.id} (${r.email})${r.orgs.length > 0 ? ` in ${r.orgs.join(', ')}` : ''}`,
    ),
  );

  withCommon(user.command('list').description('list console accounts')).action((o) =>
    runWithStore(
      o,
      async ({ store }) => createUserAdmin(store).list(),
      (users) =>
        table([
          ['ID', 'EMAIL', 'ADMIN', 'STATUS', 'ORGS', 'CREATED'],
          ...users.map((u) => [u.id, u.email, u.admin ? 'admin' : '-', u.disabled ? 'disabled' : 'enabled', u.orgs.join(',') || '-', u.created_at]),
        ]),
    ),
  );

  withCommon(
    user
      .command('update')
      .description('change a console account; a new password, disabling or a change of rights ends its sessions')
      .argument('<user>', 'its id (usr_…) or email')
      .option('--password-stdin', 'a new password, read from stdin (at least 12 characters)')
      .option('--disable', 'it can no longer sign in')
      .option('--enable', 'it can sign in again')
      .option('--admin <bool>', 'true: sees every organization; false: only its own')
      .option('--add-org <org>', 'make it a member of an organization (repeat for several)', repeat, [] as string[])
      .option('--remove-org <org>', 'end its membership of an organization (repeat for several)', repeat, [] as string[]),
  ).action((given: string, o) => {
    let outcome: ChangeOutcome | undefined;
    return runWithStore(
      o,
      async ({ store }): Promise<UserView> => {
        if (o.disable === true && o.enable === true) throw new UsageError('Give --disable or --enable, not both.');
        const admin = o.admin === undefined ? undefined : parseBool(o.admin, '--admin');
        const password = o.passwordStdin === true ? await readStdin('update') : undefined;
        const r = await createUserAdmin(store).update(given, {
          password,
          disabled: o.disable === true ? true : o.enable === true ? false : undefined,
          admin,
          addOrgIds: o.addOrg,
          removeOrgIds: o.removeOrg,
        });
        outcome = r;
        noteNoAdminLeft(r);
        return r.user;
      },
      (u) =>
        `updated ${u.disabled ? 'disabled ' : ''}${u.admin ? 'admin ' : ''}account ${u.id} (${u.email})` +
        `${u.orgs.length > 0 ? ` in ${u.orgs.join(', ')}` : ''}${outcome?.sessionsEnded ? '; its sessions were ended' : ''}`,
    );
  });

  withCommon(user.command('delete').description('delete a console account; its sessions end at once').argument('<user>', 'its id (usr_…) or email')).action(
    (given: string, o) => {
      let email = '';
      return runWithStore(
        o,
        async ({ store }) => {
          const r = await createUserAdmin(store).delete(given);
          email = r.email;
          noteNoAdminLeft(r);
          return deleted(r.id);
        },
        (r) => `deleted account ${r.id} (${email}); its sessions were ended`,
      );
    },
  );
}

/**
 * Allowed, and said on stderr: whoever runs this command can make an admin
 * again, and a stolen admin account must be removable at once, even the last.
 */
function noteNoAdminLeft(r: ChangeOutcome): void {
  if (r.noAdminLeft) {
    cliIo().stderr.write('inlet: note: no enabled admin account is left; make one with inlet user create --admin or inlet user update USER --admin true.\n');
  }
}
