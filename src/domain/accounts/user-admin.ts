import type { UserListing, UserRecord } from '../../stores/port-console.js';
import type { Store } from '../../stores/port.js';
import { AdminError } from '../admin.js';
import { normaliseEmail } from './accounts.js';
import { hashPassword, passwordProblem } from './passwords.js';

/** An account as `inlet user list` and `inlet user update` print it: never its hash. */
export interface UserView {
  id: string;
  email: string;
  admin: boolean;
  orgs: string[];
  disabled: boolean;
  created_at: string;
}

/** What `inlet user update` asks for; what is left out stays as it is. */
export interface UserUpdate {
  password?: string;
  disabled?: boolean;
  admin?: boolean;
  addOrgIds: string[];
  removeOrgIds: string[];
}

/** What a change did besides the user it leaves. */
export interface ChangeOutcome {
  /** Every session of the user was ended with the change. */
  sessionsEnded: boolean;
  /** The change took away the last enabled admin account. */
  noAdminLeft: boolean;
}

const view = (u: UserRecord, orgIds: string[]): UserView => ({
  id: u.id,
  email: u.email,
  admin: u.admin,
  orgs: orgIds,
  disabled: u.disabled,
  created_at: new Date(u.createdAt).toISOString(),
});

const signsInAsAdmin = (u: UserRecord | UserListing): boolean => u.admin && !u.disabled;

/**
 * Console accounts after creation: list, change, disable, delete. A new
 * password, disabling, deleting or any change of rights ends every session
 * of the user in the same transaction as the change, so a stolen cookie
 * stops working on its next request, on every server.
 */
export function createUserAdmin(store: Pick<Store, 'accounts' | 'admin'>) {
  const accounts = store.accounts;

  /** The user named by its id (usr_…) or its email, which are unique and never look alike. */
  async function find(given: string): Promise<UserRecord> {
    const user = given.includes('@') ? await accounts.userByEmail(normaliseEmail(given)) : await accounts.getUser(given);
    if (user === null) throw new AdminError(`No user ${given}; list them with inlet user list.`);
    return user;
  }

  async function noAdminLeft(): Promise<boolean> {
    return !(await accounts.listUsers()).some(signsInAsAdmin);
  }

  return {
    async list(): Promise<UserView[]> {
      return (await accounts.listUsers()).map((u) => view(u, u.orgIds));
    },

    async update(given: string, u: UserUpdate): Promise<{ user: UserView } & ChangeOutcome> {
      const rights = u.admin !== undefined || u.addOrgIds.length > 0 || u.removeOrgIds.length > 0;
      if (u.password === undefined && u.disabled === undefined && !rights) {
        throw new AdminError('Nothing to change: give --password-stdin, --disable, --enable, --admin, --add-org or --remove-org.');
      }
      const both = u.addOrgIds.find((org) => u.removeOrgIds.includes(org));
      if (both !== undefined) throw new AdminError(`${both} is given to both --add-org and --remove-org; give it to one of them.`);
      const weak = u.password === undefined ? null : passwordProblem(u.password);
      if (weak !== null) throw new AdminError(weak);
      const before = await find(given);
      for (const org of [...u.addOrgIds, ...u.removeOrgIds]) {
        if ((await store.admin.getOrg(org)) === null) throw new AdminError(`No organization ${org}; list them with inlet org list.`);
      }
      // Enabling alone ends nothing: a disabled account has no sessions left.
      // Any other option ends them, even one that changes nothing: a session
      // too many ended costs a sign-in, one too few is the hole this closes.
      const endSessions = u.password !== undefined || u.disabled === true || rights;
      const passwordHash = u.password === undefined ? undefined : await hashPassword(u.password);
      const done = await accounts.updateUser(before.id, {
        passwordHash,
        admin: u.admin,
        disabled: u.disabled,
        addOrgIds: [...new Set(u.addOrgIds)],
        removeOrgIds: [...new Set(u.removeOrgIds)],
        endSessions,
      });
      const after = done === 'ok' ? await accounts.getUser(before.id) : null;
      if (after === null) throw new AdminError(`No user ${given}; it was deleted meanwhile.`);
      return {
        user: view(after, await accounts.orgIdsOf(after.id)),
        sessionsEnded: endSessions,
        noAdminLeft: signsInAsAdmin(before) && !signsInAsAdmin(after) && (await noAdminLeft()),
      };
    },

    async delete(given: string): Promise<{ id: string; email: string } & ChangeOutcome> {
      const user = await find(given);
      if (!(await accounts.deleteUser(user.id))) throw new AdminError(`No user ${given}; it was deleted meanwhile.`);
      return { id: user.id, email: user.email, sessionsEnded: true, noAdminLeft: signsInAsAdmin(user) && (await noAdminLeft()) };
    },
  };
}
