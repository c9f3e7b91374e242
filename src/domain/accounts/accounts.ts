import { randomBytes } from 'node:crypto';
import type { AccountStore, SessionRecord, UserRecord } from '../../stores/port-console.js';
import type { Store } from '../../stores/port.js';
import { AdminError } from '../admin.js';
import { randomBase62 } from '../ids.js';
import { hashesMatch } from '../keys.js';
import { sha256 } from '../sha256.js';
import { isStorableText } from '../storable.js';
import { HashTiming } from './hash-timing.js';
import { hashPassword, passwordProblem, verifyPassword } from './passwords.js';
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
 * Password checks one server runs at once. Their hashes run one after
 * another on one thread (password-thread.ts), about 0.1 s each: the eighth
 * waits under a second on an idle machine, and a flood holds at most eight
 * store writes and hashes that batches could wait behind. Only sign-ins of
 * existing accounts take a place (an unknown email waits like a hash without
 * one, hash-timing.ts), and each account is throttled to a few attempts
 * (throttle.ts), so filling the bound takes many real emails.
 */
export const MAX_PASSWORD_CHECKS = 8;
/**
 * Sign-ins that wait for a place once all are taken, in turn: a burst
 * slightly past the bound is checked a little later instead of refused.
 * Past these, a sign-in is refused at once.
 */
export const MAX_WAITING_CHECKS = 8;
/** When a sign-in refused for the bound is told to try again. */
const BUSY_RETRY_MS = 1000;
/** Expired rows deleted per table at each successful sign-in (see purgeExpired). */
const PURGE_STEP = 500;
/** The longest email an account can have (createUser's rule). */
const MAX_EMAIL_LENGTH = 254;

const expired = (s: SessionRecord, now: number): boolean => now - s.lastSeenAt >= SESSION_IDLE_MS || now - s.createdAt >= SESSION_ABSOLUTE_MS;

/** Emails are kept and looked up lower-cased. */
export const normaliseEmail = (email: string): string => email.trim().toLowerCase();

/** Console accounts: creation, sign-in with throttling, sessions. */
export function createAccounts(store: Pick<Store, 'accounts' | 'admin'>, clock: () => number) {
  const accounts: AccountStore = store.accounts;
  const throttle = new LoginThrottle(accounts);
  const timing = new HashTiming();
  /** Password checks under way on this server, and those waiting for a place, in turn. */
  let checking = 0;
  const waiting: (() => void)[] = [];

  /** A place under the bound (false: none free and the queue full); each true is given back with release(). */
  async function place(): Promise<boolean> {
    if (checking < MAX_PASSWORD_CHECKS) {
      checking++;
      return true;
    }
    if (waiting.length >= MAX_WAITING_CHECKS) return false;
    // The place is handed over by release(), so `checking` never drops in between.
    await new Promise<void>((resolve) => waiting.push(resolve));
    return true;
  }
  function release(): void {
    const next = waiting.shift();
    if (next !== undefined) next();
    else checking--;
  }

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
      const found = await accounts.userByEmail(email);
      if (found === null) {
        // No hash, no place under the bound and no write: random emails cannot fill the bound, nor the
        // store. Refused as any attempt from a blocked address is; otherwise answered after a wait drawn
        // from real checks' times, so timing does not tell it from a wrong password.
        const now = clock();
        const blockedUntil = await throttle.addressBlockedUntil(address);
        if (blockedUntil > now) return { ok: false, reason: 'throttled', retryAfterMs: blockedUntil - now };
        await timing.waitLikeAHash();
        return { ok: false, reason: 'wrong' };
      }
      // Past the bound and its queue a sign-in is refused at once, before it is counted or hashed: it checks no
      // password, and every sign-in in flight holds a write of the store and a hash, which batches would otherwise wait behind.
      if (!(await place())) return { ok: false, reason: 'busy', retryAfterMs: BUSY_RETRY_MS };
      const now = clock();
      let user: UserRecord | null;
      let matches: boolean;
      try {
        const attempt = await throttle.attempt(email, address, now);
        if (!attempt.allowed) return { ok: false, reason: 'throttled', retryAfterMs: attempt.blockedUntil - now };
        // Read again once counted: the account may have changed (or gone) since.
        user = await accounts.userByEmail(email);
        const started = performance.now();
        matches = user !== null && (await verifyPassword(password, user.passwordHash));
        if (user !== null) timing.record(performance.now() - started);
      } finally {
        release();
      }
      // A disabled account is answered and counted as a wrong password whatever
      // was typed, so neither the answer nor the throttle tells whether it was right.
      if (user === null || !matches || user.disabled) return { ok: false, reason: 'wrong' };
      await throttle.succeeded(email, address);
      // Each sign-in clears a bounded step of what has expired: counts are made only by attempts that were
      // counted (none for a refused one, none per unknown email), so the steps keep up, and none waits long.
      await accounts.purgeExpired({ createdBefore: now - SESSION_ABSOLUTE_MS, seenBefore: now - SESSION_IDLE_MS, failuresBefore: now - FAILURE_WINDOW_MS, now, limit: PURGE_STEP });
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
