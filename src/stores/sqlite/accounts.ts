import { type LoginCount, countLoginAttempt } from '../login-attempts.js';
import type { AccountStore, LoginAttempt, LoginKey, LoginRule, SessionRecord, UserChange, UserListing, UserRecord } from '../port-console.js';
import type { Db } from './open.js';

interface UserRow { id: string; email: string; password_hash: string; admin: number; disabled: number; created_at: number }
interface SessionRow { token_hash: Buffer; user_id: string; csrf_token: string; created_at: number; last_seen_at: number }

const toUser = (r: UserRow): UserRecord => ({
  id: r.id, email: r.email, passwordHash: r.password_hash, admin: r.admin === 1, disabled: r.disabled === 1, createdAt: r.created_at,
});
const toSession = (r: SessionRow): SessionRecord => ({
  tokenHash: r.token_hash, userId: r.user_id, csrfToken: r.csrf_token, createdAt: r.created_at, lastSeenAt: r.last_seen_at,
});

/** A boolean for SQLite, or null to keep the column as it is. */
const flag = (b: boolean | undefined): number | null => (b === undefined ? null : b ? 1 : 0);

/** Console accounts, sessions and sign-in throttling on SQLite. */
export class SqliteAccounts implements AccountStore {
  constructor(
    private readonly db: Db,
    /** Runs a write in its turn with the store's transactions, so it never lands inside one. */
    private readonly write: <T>(fn: () => T) => Promise<T> = async (fn) => fn(),
  ) {}

  async createUser(u: UserRecord, orgIds: string[]): Promise<'ok' | 'email_taken'> {
    const add = this.db.transaction((): 'ok' | 'email_taken' => {
      if (this.db.prepare('SELECT 1 FROM users WHERE email = ?').get(u.email) !== undefined) return 'email_taken';
      this.db
        .prepare('INSERT INTO users (id, email, password_hash, admin, disabled, created_at) VALUES (?, ?, ?, ?, ?, ?)')
        .run(u.id, u.email, u.passwordHash, u.admin ? 1 : 0, u.disabled ? 1 : 0, u.createdAt);
      const member = this.db.prepare('INSERT OR IGNORE INTO memberships (user_id, org_id) VALUES (?, ?)');
      for (const org of orgIds) member.run(u.id, org);
      return 'ok';
    });
    return this.write(() => add.immediate());
  }

  async userByEmail(email: string): Promise<UserRecord | null> {
    const r = this.db.prepare('SELECT * FROM users WHERE email = ?').get(email) as UserRow | undefined;
    return r ? toUser(r) : null;
  }

  async getUser(id: string): Promise<UserRecord | null> {
    const r = this.db.prepare('SELECT * FROM users WHERE id = ?').get(id) as UserRow | undefined;
    return r ? toUser(r) : null;
  }

  async listUsers(): Promise<UserListing[]> {
    const users = (this.db.prepare('SELECT * FROM users ORDER BY email').all() as UserRow[]).map(toUser);
    return Promise.all(users.map(async (u) => ({ ...u, orgIds: await this.orgIdsOf(u.id) })));
  }

  async updateUser(id: string, c: UserChange): Promise<'ok' | 'not_found'> {
    const change = this.db.transaction((): 'ok' | 'not_found' => {
      const r = this.db
        .prepare(
          `UPDATE users SET password_hash = coalesce(@hash, password_hash), admin = coalesce(@admin, admin), disabled = coalesce(@disabled, disabled)
           WHERE id = @id`,
        )
        .run({ id, hash: c.passwordHash ?? null, admin: flag(c.admin), disabled: flag(c.disabled) });
      if (r.changes === 0) return 'not_found';
      const add = this.db.prepare('INSERT OR IGNORE INTO memberships (user_id, org_id) VALUES (?, ?)');
      for (const org of c.addOrgIds ?? []) add.run(id, org);
      const remove = this.db.prepare('DELETE FROM memberships WHERE user_id = ? AND org_id = ?');
      for (const org of c.removeOrgIds ?? []) remove.run(id, org);
      if (c.endSessions) this.db.prepare('DELETE FROM sessions WHERE user_id = ?').run(id);
      return 'ok';
    });
    return this.write(() => change.immediate());
  }

  async deleteUser(id: string): Promise<boolean> {
    const drop = this.db.transaction((): boolean => {
      if (this.db.prepare('DELETE FROM users WHERE id = ?').run(id).changes === 0) return false;
      this.db.prepare('DELETE FROM memberships WHERE user_id = ?').run(id);
      this.db.prepare('DELETE FROM sessions WHERE user_id = ?').run(id);
      return true;
    });
    return this.write(() => drop.immediate());
  }

  async orgIdsOf(userId: string): Promise<string[]> {
    const rows = this.db
      .prepare('SELECT m.org_id FROM memberships m JOIN orgs o ON o.id = m.org_id WHERE m.user_id = ? AND o.deleted_at IS NULL ORDER BY m.org_id')
      .pluck()
      .all(userId) as string[];
    return rows;
  }

  async createSession(s: SessionRecord): Promise<void> {
    await this.write(() =>
      this.db
        .prepare('INSERT INTO sessions (token_hash, user_id, csrf_token, created_at, last_seen_at) VALUES (?, ?, ?, ?, ?)')
        .run(s.tokenHash, s.userId, s.csrfToken, s.createdAt, s.lastSeenAt),
    );
  }

  async getSession(tokenHash: Buffer): Promise<SessionRecord | null> {
    const r = this.db.prepare('SELECT * FROM sessions WHERE token_hash = ?').get(tokenHash) as SessionRow | undefined;
    return r ? toSession(r) : null;
  }

  async touchSession(tokenHash: Buffer, at: number): Promise<void> {
    await this.write(() => this.db.prepare('UPDATE sessions SET last_seen_at = max(last_seen_at, ?) WHERE token_hash = ?').run(at, tokenHash));
  }

  async deleteSession(tokenHash: Buffer): Promise<void> {
    await this.write(() => this.db.prepare('DELETE FROM sessions WHERE token_hash = ?').run(tokenHash));
  }

  async noteLoginAttempt(keys: LoginKey[], at: number, rule: LoginRule): Promise<LoginAttempt> {
    const read = this.db.prepare('SELECT failures, first_at AS firstAt, blocked_until AS blockedUntil FROM login_failures WHERE key = ?');
    const put = this.db.prepare(
      `INSERT INTO login_failures (key, failures, first_at, blocked_until) VALUES (@key, @failures, @firstAt, @blockedUntil)
       ON CONFLICT (key) DO UPDATE SET failures = excluded.failures, first_at = excluded.first_at, blocked_until = excluded.blocked_until`,
    );
    // IMMEDIATE: another connection to the file cannot count between the read and the write.
    const step = this.db.transaction((): LoginAttempt => {
      const found = keys.map((k) => (read.get(k.key) as LoginCount | undefined) ?? null);
      const { attempt, rows } = countLoginAttempt(found, keys, at, rule);
      if (rows !== null) keys.forEach((k, i) => put.run({ key: k.key, ...rows[i]! }));
      return attempt;
    });
    return this.write(() => step.immediate());
  }

  async forgiveLoginAttempt(key: string): Promise<void> {
    await this.write(() => this.db.prepare('UPDATE login_failures SET failures = max(failures - 1, 0) WHERE key = ?').run(key));
  }

  async clearLoginFailures(key: string): Promise<void> {
    await this.write(() => this.db.prepare('DELETE FROM login_failures WHERE key = ?').run(key));
  }

  async purgeExpired(o: { createdBefore: number; seenBefore: number; failuresBefore: number; now: number }): Promise<void> {
    await this.write(() => {
      this.db.prepare('DELETE FROM sessions WHERE created_at < ? OR last_seen_at < ?').run(o.createdBefore, o.seenBefore);
      this.db.prepare('DELETE FROM login_failures WHERE first_at < ? AND blocked_until <= ?').run(o.failuresBefore, o.now);
    });
  }
}
