import type pg from 'pg';
import { countLoginAttempt } from '../login-attempts.js';
import type { AccountStore, LoginAttempt, LoginKey, LoginRule, SessionRecord, UserChange, UserListing, UserRecord } from '../port-console.js';
import { inTransaction, unavailable } from './pool.js';

interface UserRow { id: string; email: string; password_hash: string; admin: boolean; disabled: boolean; created_at: number }
interface SessionRow { token_hash: Buffer; user_id: string; csrf_token: string; created_at: number; last_seen_at: number }

const toUser = (r: UserRow): UserRecord => ({
  id: r.id, email: r.email, passwordHash: r.password_hash, admin: r.admin, disabled: r.disabled, createdAt: r.created_at,
});
const toSession = (r: SessionRow): SessionRecord => ({
  tokenHash: r.token_hash, userId: r.user_id, csrfToken: r.csrf_token, createdAt: r.created_at, lastSeenAt: r.last_seen_at,
});

/** Console accounts, sessions and sign-in throttling on PostgreSQL: shared by every server. */
export class PgAccounts implements AccountStore {
  constructor(private readonly pool: pg.Pool) {}

  async createUser(u: UserRecord, orgIds: string[]): Promise<'ok' | 'email_taken'> {
    return inTransaction(this.pool, async (c): Promise<'ok' | 'email_taken'> => {
      const r = await c.query(
        'INSERT INTO users (id, email, password_hash, admin, disabled, created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (email) DO NOTHING',
        [u.id, u.email, u.passwordHash, u.admin, u.disabled, u.createdAt],
      );
      if (r.rowCount === 0) return 'email_taken';
      await c.query('INSERT INTO memberships (user_id, org_id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING', [u.id, orgIds]);
      return 'ok';
    });
  }

  async userByEmail(email: string): Promise<UserRecord | null> {
    return (await this.rows<UserRow>('SELECT * FROM users WHERE email = $1', [email])).map(toUser)[0] ?? null;
  }

  async getUser(id: string): Promise<UserRecord | null> {
    return (await this.rows<UserRow>('SELECT * FROM users WHERE id = $1', [id])).map(toUser)[0] ?? null;
  }

  async listUsers(): Promise<UserListing[]> {
    const rows = await this.rows<UserRow & { org_ids: string[] }>(
      `SELECT u.*, coalesce(array_agg(m.org_id ORDER BY m.org_id COLLATE "C") FILTER (WHERE m.org_id IS NOT NULL), '{}') AS org_ids
       FROM users u
       LEFT JOIN (memberships m JOIN orgs o ON o.id = m.org_id AND o.deleted_at IS NULL) ON m.user_id = u.id
       GROUP BY u.id ORDER BY u.email COLLATE "C"`,
      [],
    );
    return rows.map((r) => ({ ...toUser(r), orgIds: r.org_ids }));
  }

  async updateUser(id: string, c: UserChange): Promise<'ok' | 'not_found'> {
    return inTransaction(this.pool, async (q): Promise<'ok' | 'not_found'> => {
      const r = await q.query(
        `UPDATE users SET password_hash = coalesce($2, password_hash), admin = coalesce($3, admin), disabled = coalesce($4, disabled)
         WHERE id = $1`,
        [id, c.passwordHash ?? null, c.admin ?? null, c.disabled ?? null],
      );
      if (r.rowCount === 0) return 'not_found';
      await q.query('INSERT INTO memberships (user_id, org_id) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING', [id, c.addOrgIds ?? []]);
      await q.query('DELETE FROM memberships WHERE user_id = $1 AND org_id = ANY($2::text[])', [id, c.removeOrgIds ?? []]);
      if (c.endSessions) await q.query('DELETE FROM sessions WHERE user_id = $1', [id]);
      return 'ok';
    });
  }

  async deleteUser(id: string): Promise<boolean> {
    return inTransaction(this.pool, async (q) => {
      if ((await q.query('DELETE FROM users WHERE id = $1', [id])).rowCount === 0) return false;
      await q.query('DELETE FROM memberships WHERE user_id = $1', [id]);
      await q.query('DELETE FROM sessions WHERE user_id = $1', [id]);
      return true;
    });
  }

  async orgIdsOf(userId: string): Promise<string[]> {
    const rows = await this.rows<{ org_id: string }>(
      'SELECT m.org_id FROM memberships m JOIN orgs o ON o.id = m.org_id WHERE m.user_id = $1 AND o.deleted_at IS NULL ORDER BY m.org_id COLLATE "C"',
      [userId],
    );
    return rows.map((r) => r.org_id);
  }

  async createSession(s: SessionRecord): Promise<void> {
    await this.rows(
      'INSERT INTO sessions (token_hash, user_id, csrf_token, created_at, last_seen_at) VALUES ($1, $2, $3, $4, $5)',
      [s.tokenHash, s.userId, s.csrfToken, s.createdAt, s.lastSeenAt],
    );
  }

  async getSession(tokenHash: Buffer): Promise<SessionRecord | null> {
    return (await this.rows<SessionRow>('SELECT * FROM sessions WHERE token_hash = $1', [tokenHash])).map(toSession)[0] ?? null;
  }

  async touchSession(tokenHash: Buffer, at: number): Promise<void> {
    await this.rows('UPDATE sessions SET last_seen_at = greatest(last_seen_at, $2) WHERE token_hash = $1', [tokenHash, at]);
  }

  async deleteSession(tokenHash: Buffer): Promise<void> {
    await this.rows('DELETE FROM sessions WHERE token_hash = $1', [tokenHash]);
  }

  async noteLoginAttempt(keys: LoginKey[], at: number, rule: LoginRule): Promise<LoginAttempt> {
    const names = keys.map((k) => k.key);
    return inTransaction(this.pool, async (c) => {
      const q = async <R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R[]> => {
        try {
          return (await c.query<R>(text, values)).rows;
        } catch (e) {
          throw unavailable(e);
        }
      };
      // Every key gets a row to lock, in one order on every server, so two attempts never wait on each other's locks in turn.
      await q('INSERT INTO login_failures (key, failures, first_at) SELECT k, 0, 0 FROM unnest($1::text[]) AS k ORDER BY k ON CONFLICT (key) DO NOTHING', [names]);
      const locked = await q<{ key: string; failures: number; first_at: number; blocked_until: number }>(
        'SELECT key, failures, first_at, blocked_until FROM login_failures WHERE key = ANY($1::text[]) ORDER BY key FOR UPDATE',
        [names],
      );
      const byKey = new Map(locked.map((r) => [r.key, { failures: r.failures, firstAt: r.first_at, blockedUntil: r.blocked_until }]));
      const { attempt, rows } = countLoginAttempt(names.map((k) => byKey.get(k) ?? null), keys, at, rule);
      if (rows !== null) {
        await q(
          `UPDATE login_failures AS f SET failures = n.failures, first_at = n.first_at, blocked_until = n.blocked_until
           FROM unnest($1::text[], $2::int[], $3::bigint[], $4::bigint[]) AS n(key, failures, first_at, blocked_until) WHERE f.key = n.key`,
          [names, rows.map((r) => r.failures), rows.map((r) => r.firstAt), rows.map((r) => r.blockedUntil)],
        );
      }
      return attempt;
    });
  }

  async forgiveLoginAttempt(key: string): Promise<void> {
    await this.rows('UPDATE login_failures SET failures = greatest(failures - 1, 0) WHERE key = $1', [key]);
  }

  async clearLoginFailures(key: string): Promise<void> {
    await this.rows('DELETE FROM login_failures WHERE key = $1', [key]);
  }

  async purgeExpired(o: { createdBefore: number; seenBefore: number; failuresBefore: number; now: number }): Promise<void> {
    await this.rows('DELETE FROM sessions WHERE created_at < $1 OR last_seen_at < $2', [o.createdBefore, o.seenBefore]);
    await this.rows('DELETE FROM login_failures WHERE first_at < $1 AND blocked_until <= $2', [o.failuresBefore, o.now]);
  }

  private async rows<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    try {
      return (await this.pool.query<R>(text, values)).rows;
    } catch (e) {
      throw unavailable(e);
    }
  }
}
