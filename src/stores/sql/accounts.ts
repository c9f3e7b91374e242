import type { Kysely } from 'kysely';
import { countLoginAttempt } from '../login-attempts.js';
import type { AccountStore, LoginAttempt, LoginKey, LoginRule, SessionRecord, UserChange, UserListing, UserRecord } from '../port-console.js';
import { SqlStorePart } from './engine.js';
import { toSession, toUser } from './rows.js';
import type { Database } from './schema.js';

type Db = Kysely<Database>;

/** Console accounts, sessions and sign-in throttling, on either SQL engine. */
export class SqlAccounts extends SqlStorePart implements AccountStore {
  async createUser(u: UserRecord, orgIds: string[]): Promise<'ok' | 'email_taken'> {
    return this.write(() => this.db.transaction().execute(async (trx): Promise<'ok' | 'email_taken'> => {
      const added = await trx.insertInto('users')
        .values({ id: u.id, email: u.email, password_hash: u.passwordHash, admin: u.admin, disabled: u.disabled, created_at: u.createdAt })
        .onConflict((c) => c.column('email').doNothing()).executeTakeFirst();
      if (added.numInsertedOrUpdatedRows === 0n) return 'email_taken';
      await this.addMemberships(trx, u.id, orgIds);
      return 'ok';
    }));
  }

  async userByEmail(email: string): Promise<UserRecord | null> {
    const r = await this.db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
    return r ? toUser(r) : null;
  }

  async getUser(id: string): Promise<UserRecord | null> {
    const r = await this.db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toUser(r) : null;
  }

  async listUsers(): Promise<UserListing[]> {
    const users = await this.db.selectFrom('users').selectAll().orderBy(this.engine.bytewise('email')).execute();
    const members = await this.liveMemberships(this.db).select('m.user_id').execute();
    const orgsOf = new Map<string, string[]>();
    for (const m of members) orgsOf.set(m.user_id, [...(orgsOf.get(m.user_id) ?? []), m.org_id]);
    return users.map((r) => ({ ...toUser(r), orgIds: orgsOf.get(r.id) ?? [] }));
  }

  async updateUser(id: string, c: UserChange): Promise<'ok' | 'not_found'> {
    return this.write(() => this.db.transaction().execute(async (trx): Promise<'ok' | 'not_found'> => {
      // Always one UPDATE, even with nothing to set: its count says whether the user exists.
      const changed = await trx.updateTable('users').set((eb) => ({
        password_hash: c.passwordHash ?? eb.ref('password_hash'),
        ...(c.admin !== undefined && { admin: c.admin }),
        ...(c.disabled !== undefined && { disabled: c.disabled }),
      })).where('id', '=', id).executeTakeFirst();
      if (changed.numUpdatedRows === 0n) return 'not_found';
      await this.addMemberships(trx, id, c.addOrgIds ?? []);
      if ((c.removeOrgIds ?? []).length > 0) {
        await trx.deleteFrom('memberships').where('user_id', '=', id).where('org_id', 'in', c.removeOrgIds!).execute();
      }
      if (c.endSessions) await trx.deleteFrom('sessions').where('user_id', '=', id).execute();
      return 'ok';
    }));
  }

  async deleteUser(id: string): Promise<boolean> {
    return this.write(() => this.db.transaction().execute(async (trx) => {
      const gone = await trx.deleteFrom('users').where('id', '=', id).executeTakeFirst();
      if (gone.numDeletedRows === 0n) return false;
      await trx.deleteFrom('memberships').where('user_id', '=', id).execute();
      await trx.deleteFrom('sessions').where('user_id', '=', id).execute();
      return true;
    }));
  }

  async orgIdsOf(userId: string): Promise<string[]> {
    const rows = await this.liveMemberships(this.db).where('m.user_id', '=', userId).execute();
    return rows.map((r) => r.org_id);
  }

  async createSession(s: SessionRecord): Promise<void> {
    await this.write(() => this.db.insertInto('sessions')
      .values({ token_hash: s.tokenHash, user_id: s.userId, csrf_token: s.csrfToken, created_at: s.createdAt, last_seen_at: s.lastSeenAt })
      .execute());
  }

  async getSession(tokenHash: Buffer): Promise<SessionRecord | null> {
    const r = await this.db.selectFrom('sessions').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
    return r ? toSession(r) : null;
  }

  async touchSession(tokenHash: Buffer, at: number): Promise<void> {
    // Never backwards: a late touch leaves a later one in place.
    await this.write(() => this.db.updateTable('sessions').set({ last_seen_at: at })
      .where('token_hash', '=', tokenHash).where('last_seen_at', '<', at).execute());
  }

  async deleteSession(tokenHash: Buffer): Promise<void> {
    await this.write(() => this.db.deleteFrom('sessions').where('token_hash', '=', tokenHash).execute());
  }

  async noteLoginAttempt(keys: LoginKey[], at: number, rule: LoginRule): Promise<LoginAttempt> {
    const names = [...new Set(keys.map((k) => k.key))].sort();
    if (names.length === 0) return countLoginAttempt([], keys, at, rule).attempt;
    return this.write(() => this.db.transaction().execute(async (trx) => {
      // Every key gets a row to lock, in one order on every server, so two
      // attempts never wait on each other's locks in turn. A row of zeros
      // is one made here, and counts as none.
      await trx.insertInto('login_failures').values(names.map((key) => ({ key, failures: 0, first_at: 0 })))
        .onConflict((c) => c.column('key').doNothing()).execute();
      const locked = await trx.selectFrom('login_failures').select(['key', 'failures', 'first_at', 'blocked_until'])
        .where('key', 'in', names).orderBy(this.engine.bytewise('key')).$if(this.engine.rowLocks, (q) => q.forUpdate()).execute();
      const byKey = new Map(locked.filter((r) => r.first_at !== 0 || r.failures !== 0 || r.blocked_until !== 0)
        .map((r) => [r.key, { failures: r.failures, firstAt: r.first_at, blockedUntil: r.blocked_until }]));
      const { attempt, rows } = countLoginAttempt(keys.map((k) => byKey.get(k.key) ?? null), keys, at, rule);
      for (const [i, r] of (rows ?? []).entries()) {
        await trx.updateTable('login_failures').set({ failures: r.failures, first_at: r.firstAt, blocked_until: r.blockedUntil })
          .where('key', '=', keys[i]!.key).execute();
      }
      return attempt;
    }));
  }

  async forgiveLoginAttempt(key: string): Promise<void> {
    await this.write(() => this.db.updateTable('login_failures').set((eb) => ({ failures: eb('failures', '-', 1) }))
      .where('key', '=', key).where('failures', '>', 0).execute());
  }

  async clearLoginFailures(key: string): Promise<void> {
    await this.write(() => this.db.deleteFrom('login_failures').where('key', '=', key).execute());
  }

  async purgeExpired(o: { createdBefore: number; seenBefore: number; failuresBefore: number; now: number }): Promise<void> {
    await this.write(async () => {
      await this.db.deleteFrom('sessions').where((eb) => eb.or([eb('created_at', '<', o.createdBefore), eb('last_seen_at', '<', o.seenBefore)])).execute();
      await this.db.deleteFrom('login_failures').where('first_at', '<', o.failuresBefore).where('blocked_until', '<=', o.now).execute();
    });
  }

  /** Memberships of organizations not deleted, in the order of their org ids. */
  private liveMemberships(db: Db) {
    return db.selectFrom('memberships as m').innerJoin('orgs as o', 'o.id', 'm.org_id').select('m.org_id')
      .where('o.deleted_at', 'is', null).orderBy(this.engine.bytewise('m.org_id'));
  }

  private async addMemberships(trx: Db, userId: string, orgIds: string[]): Promise<void> {
    if (orgIds.length === 0) return;
    await trx.insertInto('memberships').values(orgIds.map((org) => ({ user_id: userId, org_id: org })))
      .onConflict((c) => c.doNothing()).execute();
  }
}
