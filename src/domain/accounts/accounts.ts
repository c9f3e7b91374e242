import { randomBytes } from 'node:crypto';
import type { AccountStore, SessionRecord, UserRecord } from '../../stores/port-console.js';
import type { Store } from '../../stores/port.js';
import { AdminError } from '../admin.js';
import { randomBase62 } from '../ids.js';
import { hashesMatch } from '../keys.js';
import { sha256 } from '../sha256.js';
import { isStorableText } from '../storable.js';
import { decoyHash, hashPassword, passwordProblem, verifyPassword } from './passwords.js';
import { FAILURE_WINDOW_MS, LoginThrottle } from './throttle.js';

/** A session ends after this long without a request… */
export const SESSION_IDLE_MS = 8 * 3600_000;
/** …and this long after sign-in, whatever happens. */
export const SESSION_ABSOLUTE_MS = 7 * 24 * 3600_000;
/** last_seen_at is written at most this often per session. */
const TOUCH_EVERY_MS = 60_000;

/** What an account may see: every organization (admin) or its own. */
export interface Viewer {
  user: UserRecord;
  /** null: every organization. */
  orgIds: Set<string> | null;
  session: SessionRecord;
}

export type SignIn =
  | { ok: true; token: string }
  | { ok: false; reason: 'wrong' }
  | { ok: false; reason: 'throttled'; retryAfterMs: number }
  | { ok: false; reason: 'busy'; retryAfterMs: number };

/**
 * Sign-ins one server checks at once. Their hashes run one after another on
 * one thread (password-thread.ts), about 0.1 s each: the eighth waits under
 * a second on an idle machine, and a flood holds at most eight store writes
 * and hashes that batches could wait behind.
 */
export const MAX_PASSWORD_CHECKS = 8;
/** When a sign-in refused for the bound is told to try again. */
const BUSY_RETRY_MS = 1000;
/** The longest email an account can have (createUser's rule). */
const MAX_EMAIL_LENGTH = 254;

const expired = (s: SessionRecord, now: number): boolean => now - s.lastSeenAt >= SESSION_IDLE_MS || now - s.createdAt >= SESSION_ABSOLUTE_MS;

/** Emails are kept and looked up lower-cased. */
export const normaliseEmail = (email: string): string => email.trim().toLowerCase();

/** Console accounts: creation, sign-in with throttling, sessions. */
export function createAccounts(store: Pick<Store, 'accounts' | 'admin'>, clock: () => number) {
  const accounts: AccountStore = store.accounts;
  const throttle = new LoginThrottle(accounts);
  /** Password checks under way on this server. */
  let checking = 0;

  /**
   * Whether the account still has the password that was checked and is not
   * disabled. Read after the session is written: a change that ends the
   * user's sessions either committed before (seen here) or deletes this one.
   */
  async function stillSignsIn(checked: UserRecord): Promise<boolean> {
    const now = await accounts.getUser(checked.id);
    return now !== null && !now.disabled && now.passwordHash === checked.passwordHash;
  }

  return {
    /** `inlet user create`: the password is hashed here and never stored or shown as given. */
    async createUser(opts: { email: string; password: string; admin: boolean; orgIds: string[] }) {
      const email = normaliseEmail(opts.email);
      if (!/^[^\s@]+@[^\s@]+$/.test(email) || email.length > MAX_EMAIL_LENGTH) throw new AdminError(`--email "${opts.email}" is not an email address.`);
      const weak = passwordProblem(opts.password);
      if (weak !== null) throw new AdminError(weak);
      for (const org of opts.orgIds) {
        if ((await store.admin.getOrg(org)) === null) throw new AdminError(`No organization ${org}; list them with inlet org list.`);
      }
      const user: UserRecord = { id: `usr_${randomBase62(16)}`, email, passwordHash: await hashPassword(opts.password), admin: opts.admin, disabled: false, createdAt: clock() };
      const orgIds = [...new Set(opts.orgIds)];
      if ((await accounts.createUser(user, orgIds)) === 'email_taken') throw new AdminError(`An account with the email ${email} already exists.`);
      return { id: user.id, email: user.email, admin: user.admin, orgs: orgIds };
    },

    /** Checks a password (throttled per account and per client address, and bounded in number at once) and starts a session. */
    async signIn(emailGiven: string, password: string, address: string): Promise<SignIn> {
      const email = normaliseEmail(emailGiven);
      // No account has an email no engine could store (nor a longer one than createUser takes): wrong, before any query.
      if (email.length > MAX_EMAIL_LENGTH || !isStorableText(email)) return { ok: false, reason: 'wrong' };
      // Past the bound a sign-in is refused at once, before it is counted or hashed: it checks no password, and
      // every sign-in in flight holds a write of the store and a hash, which batches would otherwise wait behind.
      if (checking >= MAX_PASSWORD_CHECKS) return { ok: false, reason: 'busy', retryAfterMs: BUSY_RETRY_MS };
      checking++;
      const now = clock();
      let user: UserRecord | null;
      let matches: boolean;
      try {
        const attempt = await throttle.attempt(email, address, now);
        if (!attempt.allowed) return { ok: false, reason: 'throttled', retryAfterMs: attempt.blockedUntil - now };
        user = await accounts.userByEmail(email);
        // An unknown email costs a hash too, so timing does not tell which was wrong.
        matches = await verifyPassword(password, user?.passwordHash ?? (await decoyHash()));
      } finally {
        checking--;
      }
      // A disabled account is answered and counted as a wrong password whatever
      // was typed, so neither the answer nor the throttle tells whether it was right.
      if (user === null || !matches || user.disabled) return { ok: false, reason: 'wrong' };
      await throttle.succeeded(email, address);
      // Sign-ins are rare: each one clears what has expired, so the tables never grow without bound.
      await accounts.purgeExpired({ createdBefore: now - SESSION_ABSOLUTE_MS, seenBefore: now - SESSION_IDLE_MS, failuresBefore: now - FAILURE_WINDOW_MS, now });
      const token = randomBytes(32).toString('base64url');
      await accounts.createSession({ tokenHash: sha256(token), userId: user.id, csrfToken: randomBytes(24).toString('base64url'), createdAt: now, lastSeenAt: now });
      if (!(await stillSignsIn(user))) {
        await accounts.deleteSession(sha256(token));
        return { ok: false, reason: 'wrong' };
      }
      return { ok: true, token };
    },

    /**
     * The viewer a session token stands for, or null when it is unknown or
     * expired. `touch: false` checks without counting as activity (a live
     * view left open must not keep its session from idling out).
     */
    async viewer(token: string, touch = true): Promise<Viewer | null> {
      const hash = sha256(token);
      const session = await accounts.getSession(hash);
      const now = clock();
      if (session === null || !hashesMatch(session.tokenHash, hash)) return null;
      if (expired(session, now)) {
        await accounts.deleteSession(hash);
        return null;
      }
      const user = await accounts.getUser(session.userId);
      // Disabling or deleting ends the sessions with it; one left behind (a
      // sign-in that raced the change) is ended here all the same.
      if (user === null || user.disabled) {
        await accounts.deleteSession(hash);
        return null;
      }
      if (touch && now - session.lastSeenAt > TOUCH_EVERY_MS) await accounts.touchSession(hash, now);
      return { user, session, orgIds: user.admin ? null : new Set(await accounts.orgIdsOf(user.id)) };
    },

    /** Whether a session is still open: one read, nothing written (live views check theirs every second). */
    async sessionOpen(token: string): Promise<boolean> {
      const hash = sha256(token);
      const session = await accounts.getSession(hash);
      return session !== null && hashesMatch(session.tokenHash, hash) && !expired(session, clock());
    },

    signOut(token: string): Promise<void> {
      return accounts.deleteSession(sha256(token));
    },
  };
}

/** Whether the viewer may see anything of this organization. */
export function canSee(viewer: Pick<Viewer, 'orgIds'>, orgId: string): boolean {
  return viewer.orgIds === null || viewer.orgIds.has(orgId);
}
