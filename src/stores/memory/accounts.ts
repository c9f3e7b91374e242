import { StoreUnavailableError } from '../port.js';
import { countLoginAttempt } from '../login-attempts.js';
import type { AccountStore, LoginAttempt, LoginKey, LoginRule, SessionRecord, UserChange, UserListing, UserRecord } from '../port-console.js';
import { type MemoryDatabase, type SessionRow, byteOrder } from './database.js';

const session = (hex: string, s: SessionRow): SessionRecord => ({ tokenHash: Buffer.from(hex, 'hex'), ...s });

/**
 * Console accounts, sessions and sign-in throttling in memory. Every write
 * takes its turn with the transactions (MemoryDatabase.exclusive), so a
 * commit, which puts its copy of the tables in place, never loses it.
 */
export class MemoryAccounts implements AccountStore {
  constructor(private readonly db: MemoryDatabase) {}

  private get t() {
    return this.db.tables;
  }

  createUser(u: UserRecord, orgIds: string[]): Promise<'ok' | 'email_taken'> {
    return this.db.exclusive(() => {
      for (const other of this.t.users.values()) if (other.email === u.email) return 'email_taken';
      this.t.users.set(u.id, { ...u });
      const orgs = this.t.memberships.get(u.id) ?? new Set<string>();
      for (const org of orgIds) orgs.add(org);
      this.t.memberships.set(u.id, orgs);
      return 'ok';
    });
  }

  async userByEmail(email: string): Promise<UserRecord | null> {
    for (const u of this.t.users.values()) if (u.email === email) return { ...u };
    return null;
  }

  async getUser(id: string): Promise<UserRecord | null> {
    const u = this.t.users.get(id);
    return u === undefined ? null : { ...u };
  }

  async listUsers(): Promise<UserListing[]> {
    const users = [...this.t.users.values()].sort((a, b) => byteOrder(a.email, b.email));
    return Promise.all(users.map(async (u) => ({ ...u, orgIds: await this.orgIdsOf(u.id) })));
  }

  updateUser(id: string, c: UserChange): Promise<'ok' | 'not_found'> {
    return this.db.exclusive(() => {
      const u = this.t.users.get(id);
      if (u === undefined) return 'not_found';
      if (c.passwordHash !== undefined) u.passwordHash = c.passwordHash;
      if (c.admin !== undefined) u.admin = c.admin;
      if (c.disabled !== undefined) u.disabled = c.disabled;
      const orgs = this.t.memberships.get(id) ?? new Set<string>();
      for (const org of c.addOrgIds ?? []) orgs.add(org);
      for (const org of c.removeOrgIds ?? []) orgs.delete(org);
      this.t.memberships.set(id, orgs);
      if (c.endSessions) this.endSessionsOf(id);
      return 'ok';
    });
  }

  deleteUser(id: string): Promise<boolean> {
    return this.db.exclusive(() => {
      if (!this.t.users.delete(id)) return false;
      this.t.memberships.delete(id);
      this.endSessionsOf(id);
      return true;
    });
  }

  private endSessionsOf(userId: string): void {
    for (const [hex, s] of this.t.sessions) if (s.userId === userId) this.t.sessions.delete(hex);
  }

  async orgIdsOf(userId: string): Promise<string[]> {
    const live = [...(this.t.memberships.get(userId) ?? [])].filter((id) => this.t.orgs.get(id)?.deletedAt === null);
    return live.sort(byteOrder);
  }

  createSession(s: SessionRecord): Promise<void> {
    const { tokenHash, ...row } = s;
    return this.db.exclusive(() => {
      const hex = tokenHash.toString('hex');
      // The token hash is the primary key on the other engines: refused as a constraint refuses.
      if (this.t.sessions.has(hex)) throw new StoreUnavailableError('The memory store refused the write: a session with this token hash exists.', { refused: true });
      this.t.sessions.set(hex, row);
    });
  }

  async getSession(tokenHash: Buffer): Promise<SessionRecord | null> {
    const hex = tokenHash.toString('hex');
    const s = this.t.sessions.get(hex);
    return s === undefined ? null : session(hex, s);
  }

  touchSession(tokenHash: Buffer, at: number): Promise<void> {
    return this.db.exclusive(() => {
      const s = this.t.sessions.get(tokenHash.toString('hex'));
      if (s !== undefined) s.lastSeenAt = Math.max(s.lastSeenAt, at);
    });
  }

  deleteSession(tokenHash: Buffer): Promise<void> {
    return this.db.exclusive(() => void this.t.sessions.delete(tokenHash.toString('hex')));
  }

  noteLoginAttempt(keys: LoginKey[], at: number, rule: LoginRule): Promise<LoginAttempt> {
    return this.db.exclusive(() => {
      const { attempt, rows } = countLoginAttempt(keys.map((k) => this.t.loginFailures.get(k.key) ?? null), keys, at, rule);
      if (rows !== null) keys.forEach((k, i) => this.t.loginFailures.set(k.key, rows[i]!));
      return attempt;
    });
  }

  forgiveLoginAttempt(key: string): Promise<void> {
    return this.db.exclusive(() => {
      const f = this.t.loginFailures.get(key);
      if (f !== undefined) f.failures = Math.max(0, f.failures - 1);
    });
  }

  clearLoginFailures(key: string): Promise<void> {
    return this.db.exclusive(() => void this.t.loginFailures.delete(key));
  }

  purgeExpired(o: { createdBefore: number; seenBefore: number; failuresBefore: number; now: number }): Promise<void> {
    return this.db.exclusive(() => {
      for (const [hex, s] of this.t.sessions) {
        if (s.createdAt < o.createdBefore || s.lastSeenAt < o.seenBefore) this.t.sessions.delete(hex);
      }
      for (const [key, f] of this.t.loginFailures) {
        if (f.firstAt < o.failuresBefore && f.blockedUntil <= o.now) this.t.loginFailures.delete(key);
      }
    });
  }
}
