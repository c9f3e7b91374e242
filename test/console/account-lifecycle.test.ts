/**
 * Console accounts after creation (fault: accounts had no life cycle, so a
 * stolen cookie worked for up to 7 days): disabling, a new password, a
 * change of rights and deletion end the user's sessions, and viewer()
 * refuses a disabled or deleted user, on every engine.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccounts } from '../../src/domain/accounts/accounts.js';
import { hashPassword } from '../../src/domain/accounts/passwords.js';
import { type UserUpdate, createUserAdmin } from '../../src/domain/accounts/user-admin.js';
import { createAdmin } from '../../src/domain/admin.js';
import type { Collector } from '../../src/domain/collector.js';
import { sha256 } from '../../src/domain/sha256.js';
import type { AccountStore } from '../../src/stores/port-console.js';
import { STORES, type StoreUnderTest } from '../conformance/stores.js';
import { TestClock } from '../helpers/fixture.js';
import { PASSWORD } from './helpers.js';

const NEW_PASSWORD = 'a brand new password of length';

for (const engine of STORES) {
  describe(`${engine.name}: account life cycle`, () => {
    let sut: StoreUnderTest;
    let collector: Collector;
    /** Another server on the same database: where the change is made. */
    let second: Collector;
    const clock = new TestClock();
    let accounts: ReturnType<typeof createAccounts>;
    let users: ReturnType<typeof createUserAdmin>;
    let orgA: string;
    let orgB: string;
    let n = 0;

    beforeAll(async () => {
      sut = await engine.make();
      collector = sut.collector;
      second = await sut.another();
      accounts = createAccounts(collector, clock.now);
      users = createUserAdmin(second);
      const admin = createAdmin(collector.store, clock.now);
      orgA = (await admin.createOrg('A')).id;
      orgB = (await admin.createOrg('B')).id;
    });
    afterAll(async () => {
      await sut?.cleanup();
    });

    let passwordHash: string;
    beforeAll(async () => {
      passwordHash = await hashPassword(PASSWORD);
    });

    /**
     * A new account in org A with two sessions (two browsers), written as a
     * sign-in writes them: the password is hashed once for the whole file.
     */
    async function signedInTwice(opts: { admin?: boolean } = {}) {
      const email = `user${++n}@life.test`;
      const id = `usr_life${n}`;
      await collector.accounts.createUser({ id, email, passwordHash, admin: opts.admin ?? false, disabled: false, createdAt: clock.now() }, [orgA]);
      const tokens = [randomBytes(32).toString('base64url'), randomBytes(32).toString('base64url')];
      for (const t of tokens) await collector.accounts.createSession({ tokenHash: sha256(t), userId: id, csrfToken: 'c'.repeat(32), createdAt: clock.now(), lastSeenAt: clock.now() });
      return { id, email, tokens };
    }
    const viewers = async (tokens: string[]) => Promise.all(tokens.map((t) => accounts.viewer(t)));
    const sessionRows = async (tokens: string[]) => (await Promise.all(tokens.map((t) => collector.accounts.getSession(sha256(t))))).filter((s) => s !== null);

    it('a disabled user’s session is refused on its next request, and every session row of it is gone', async () => {
      const u = await signedInTwice();
      expect((await viewers(u.tokens)).every((v) => v !== null)).toBe(true);
      const r = await users.update(u.id, { disabled: true, addOrgIds: [], removeOrgIds: [] });
      expect(r.sessionsEnded).toBe(true);
      expect(r.user).toMatchObject({ id: u.id, disabled: true });
      expect(await sessionRows(u.tokens)).toEqual([]);
      expect(await viewers(u.tokens)).toEqual([null, null]);
    });

    it('viewer() refuses a disabled user even if a session row survived, and ends that session', async () => {
      const u = await signedInTwice();
      // What no command does: disabling that leaves the sessions in place.
      expect(await second.accounts.updateUser(u.id, { disabled: true, endSessions: false })).toBe('ok');
      expect(await sessionRows(u.tokens)).toHaveLength(2);
      expect(await accounts.viewer(u.tokens[0]!, false)).toBeNull();
      expect(await accounts.viewer(u.tokens[1]!)).toBeNull();
      expect(await sessionRows(u.tokens)).toEqual([]);
    });

    it('a disabled user cannot sign in: answered and counted as a wrong password, whatever the password', async () => {
      const u = await signedInTwice();
      await users.update(u.email, { disabled: true, addOrgIds: [], removeOrgIds: [] });
      expect(await accounts.signIn(u.email, 'not the password at all', '10.1.0.1')).toEqual({ ok: false, reason: 'wrong' });
      // The right password is counted as a failure too: the throttle tells nothing either.
      for (let i = 0; i < 5; i++) expect(await accounts.signIn(u.email, PASSWORD, `10.1.0.${i + 2}`)).toEqual({ ok: false, reason: 'wrong' });
      expect(await accounts.signIn(u.email, PASSWORD, '10.1.1.1')).toMatchObject({ ok: false, reason: 'throttled' });
      clock.advance(16 * 60_000);
      await users.update(u.id, { disabled: false, addOrgIds: [], removeOrgIds: [] });
      expect(await accounts.signIn(u.email, PASSWORD, '10.1.1.2')).toMatchObject({ ok: true });
    });

    it('a new password ends the user’s other sessions; the old password no longer signs in', async () => {
      const u = await signedInTwice();
      const bystander = await signedInTwice();
      const r = await users.update(u.email.toUpperCase(), { password: NEW_PASSWORD, addOrgIds: [], removeOrgIds: [] });
      expect(r.sessionsEnded).toBe(true);
      expect(await viewers(u.tokens)).toEqual([null, null]);
      expect((await viewers(bystander.tokens)).every((v) => v !== null)).toBe(true);
      expect(await accounts.signIn(u.email, PASSWORD, '10.2.0.1')).toEqual({ ok: false, reason: 'wrong' });
      expect(await accounts.signIn(u.email, NEW_PASSWORD, '10.2.0.1')).toMatchObject({ ok: true });
    });

    it('a sign-in that checked the old password while a new one was set leaves no session behind', async () => {
      const u = await signedInTwice();
      // The change commits between the password check and the session's write.
      const racing: AccountStore = Object.create(collector.accounts, {
        createSession: {
          value: async (s: Parameters<AccountStore['createSession']>[0]) => {
            await users.update(u.id, { password: NEW_PASSWORD, addOrgIds: [], removeOrgIds: [] });
            return collector.accounts.createSession(s);
          },
        },
      });
      const r = await createAccounts({ accounts: racing, admin: collector.admin }, clock.now).signIn(u.email, PASSWORD, '10.3.0.1');
      expect(r).toEqual({ ok: false, reason: 'wrong' });
      expect((await collector.accounts.listUsers()).find((x) => x.id === u.id)).toBeDefined();
      expect(await viewers(u.tokens)).toEqual([null, null]);
    });

    it('a change of orgs ends sessions, and so does a change of admin; enabling alone ends none', async () => {
      const u = await signedInTwice();
      const r = await users.update(u.id, { addOrgIds: [orgB], removeOrgIds: [orgA] });
      expect(r).toMatchObject({ sessionsEnded: true, user: { orgs: [orgB] } });
      expect(await viewers(u.tokens)).toEqual([null, null]);

      const v = await signedInTwice();
      expect((await users.update(v.id, { admin: true, addOrgIds: [], removeOrgIds: [] })).user.admin).toBe(true);
      expect(await viewers(v.tokens)).toEqual([null, null]);

      const w = await signedInTwice();
      expect((await users.update(w.id, { disabled: false, addOrgIds: [], removeOrgIds: [] })).sessionsEnded).toBe(false);
      expect((await viewers(w.tokens)).every((x) => x !== null)).toBe(true);
    });

    it('deleting a user ends its sessions', async () => {
      const u = await signedInTwice();
      expect(await users.delete(u.id)).toMatchObject({ id: u.id, email: u.email, sessionsEnded: true });
      expect(await sessionRows(u.tokens)).toEqual([]);
      expect(await viewers(u.tokens)).toEqual([null, null]);
      expect(await accounts.signIn(u.email, PASSWORD, '10.4.0.1')).toEqual({ ok: false, reason: 'wrong' });
      await expect(users.delete(u.id)).rejects.toThrow(`No user ${u.id}; list them with inlet user list.`);
    });

    it('says when a change leaves no enabled admin account, and allows it', async () => {
      for (const other of (await users.list()).filter((x) => x.admin && !x.disabled)) await users.delete(other.id);
      const a = await signedInTwice({ admin: true });
      const b = await signedInTwice({ admin: true });
      expect((await users.update(a.id, { disabled: true, addOrgIds: [], removeOrgIds: [] })).noAdminLeft).toBe(false);
      expect((await users.update(b.id, { admin: false, addOrgIds: [], removeOrgIds: [] })).noAdminLeft).toBe(true);
      expect((await users.update(b.id, { admin: true, addOrgIds: [], removeOrgIds: [] })).noAdminLeft).toBe(false);
      expect((await users.delete(b.id)).noAdminLeft).toBe(true);
    });

    it('refuses what it cannot do with a sentence that says what to change, and changes nothing', async () => {
      const u = await signedInTwice();
      const none = { addOrgIds: [], removeOrgIds: [] };
      const refused: [string, UserUpdate, RegExp][] = [
        ['usr_nobody', { ...none, disabled: true }, /No user usr_nobody; list them with inlet user list/],
        ['nobody@life.test', { ...none, disabled: true }, /No user nobody@life.test/],
        [u.id, none, /Nothing to change: give --password-stdin/],
        [u.id, { ...none, password: 'too short' }, /at least 12 characters/],
        [u.id, { addOrgIds: ['org_nope'], removeOrgIds: [] }, /No organization org_nope; list them with inlet org list/],
        [u.id, { addOrgIds: [], removeOrgIds: ['org_nope'] }, /No organization org_nope/],
        [u.id, { addOrgIds: [orgB], removeOrgIds: [orgB] }, /given to both --add-org and --remove-org/],
      ];
      for (const [who, change, message] of refused) {
        await expect(users.update(who, change), JSON.stringify(change)).rejects.toThrow(message);
      }
      expect((await viewers(u.tokens)).every((v) => v !== null)).toBe(true);
      expect((await users.list()).find((x) => x.id === u.id)).toMatchObject({ orgs: [orgA], disabled: false, admin: false });
    });
  });
}
