import type { ExpressionBuilder, Kysely } from 'kysely';
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
    const users = await this.db.selectFrom('users').selectAll().orderBy(this.engine.dialect.bytewise('email')).execute();
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
    if (names.length === 0) return { allowed: true };
    // Blocks first, with one read and no write: a refused attempt leaves no
    // row behind (a row for every refused attempt of a new email grew the
    // table without bound) and takes no write turn.
    const blocked = await this.loginBlockedUntil(names);
    if (blocked > at) return { allowed: false, blockedUntil: blocked };
    try {
      return await this.write(() => this.db.transaction().execute(async (trx) => {
        // Each key's count goes up in one upsert that locks its row, in one
        // order on every server (no two attempts wait on each other's locks
        // in turn). It leaves blocked_until as it was, so what it returns
        // shows a block set by an attempt that committed since the read above.
        const counted: { key: string; failures: number; blockedUntil: number }[] = [];
        for (const key of names) {
          const current = (eb: ExpressionBuilder<Database, 'login_failures'>) => eb('login_failures.first_at', '>', at - rule.windowMs);
          const r = await trx.insertInto('login_failures').values({ key, failures: 1, first_at: at, blocked_until: 0 })
            .onConflict((c) => c.column('key').doUpdateSet((eb) => ({
              failures: eb.case().when(current(eb)).then(eb(eb.ref('login_failures.failures'), '+', 1)).else(1).end(),
              first_at: eb.case().when(current(eb)).then(eb.ref('login_failures.first_at')).else(at).end(),
            })))
            .returning(['failures', 'blocked_until']).executeTakeFirstOrThrow();
          counted.push({ key, failures: r.failures, blockedUntil: r.blocked_until });
        }
        const late = Math.max(0, ...counted.map((c) => c.blockedUntil));
        if (late > at) throw new Refused(late);
        for (const c of counted) {
          // A key given twice is counted once, under the fewest free attempts it was given with.
          const free = Math.min(...keys.filter((k) => k.key === c.key).map((k) => k.free));
          const until = c.failures > free ? at + rule.blockMs(c.failures - free) : 0;
          // A block is never shortened.
          if (until > c.blockedUntil) await trx.updateTable('login_failures').set({ blocked_until: until }).where('key', '=', c.key).execute();
        }
        return { allowed: true } as const;
      }));
    } catch (e) {
      // Refused after all: the transaction rolled back, so the attempt is neither counted nor kept.
      if (e instanceof Refused) return { allowed: false, blockedUntil: e.blockedUntil };
      throw e;
    }
  }

  async loginBlockedUntil(keys: string[]): Promise<number> {
    if (keys.length === 0) return 0;
    const found = await this.db.selectFrom('login_failures').select('blocked_until').where('key', 'in', keys).execute();
    return Math.max(0, ...found.map((r) => r.blocked_until));
  }

  async forgiveLoginAttempt(key: string): Promise<void> {
    await this.write(() => this.db.updateTable('login_failures').set((eb) => ({ failures: eb('failures', '-', 1) }))
      .where('key', '=', key).where('failures', '>', 0).execute());
  }

  async clearLoginFailures(key: string): Promise<void> {
    await this.write(() => this.db.deleteFrom('login_failures').where('key', '=', key).execute());
  }

  async purgeExpired(o: { createdBefore: number; seenBefore: number; failuresBefore: number; now: number; limit: number }): Promise<number> {
    // At most `limit` rows of each table a step, picked by key: one DELETE of
    // millions of rows outlasted PostgreSQL's statement_timeout, and the
    // sign-in waiting on it failed, every time.
    return this.write(async () => {
      const sessions = await this.db.deleteFrom('sessions').where('token_hash', 'in', (eb) => eb.selectFrom('sessions').select('token_hash')
        .where((w) => w.or([w('created_at', '<', o.createdBefore), w('last_seen_at', '<', o.seenBefore)])).limit(o.limit)).executeTakeFirst();
      const failures = await this.db.deleteFrom('login_failures').where('key', 'in', (eb) => eb.selectFrom('login_failures').select('key')
        .where('first_at', '<', o.failuresBefore).where('blocked_until', '<=', o.now).limit(o.limit)).executeTakeFirst();
      return Number(sessions.numDeletedRows) + Number(failures.numDeletedRows);
    });
  }

  /** Memberships of organizations not deleted, in the order of their org ids. */
  private liveMemberships(db: Db) {
    return db.selectFrom('memberships as m').innerJoin('orgs as o', 'o.id', 'm.org_id').select('m.org_id')
      .where('o.deleted_at', 'is', null).orderBy(this.engine.dialect.bytewise('m.org_id'));
  }

  private async addMemberships(trx: Db, userId: string, orgIds: string[]): Promise<void> {
    if (orgIds.length === 0) return;
    await trx.insertInto('memberships').values(orgIds.map((org) => ({ user_id: userId, org_id: org })))
      .onConflict((c) => c.doNothing()).execute();
  }
}

/** Thrown to roll back an attempt found blocked once its rows were locked. */
class Refused extends Error {
  constructor(readonly blockedUntil: number) {
    super('sign-in blocked');
  }
}
