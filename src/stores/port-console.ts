/**
 * The parts of the store port the console needs: accounts and sessions
 * (AccountStore) and the lists and summaries its pages show (ListingStore).
 * Kept apart from port.ts so each stays small; Store exposes both.
 */
import type { Org, Project, Source, StoredEvent } from './port.js';

/** A console account. `passwordHash` is a self-describing scrypt hash, never a password. */
export interface UserRecord {
  id: string;
  email: string;
  passwordHash: string;
  admin: boolean;
  /** A disabled account cannot sign in, and no session of it is honoured. */
  disabled: boolean;
  createdAt: number;
}

/** A user with the organizations it is a member of (deleted ones left out), as `inlet user list` shows it. */
export interface UserListing extends UserRecord {
  orgIds: string[];
}

/**
 * A change to an account. What is not given stays as it is. `endSessions`
 * deletes every session of the user in the same transaction, so no request
 * can be served under the old password or rights once the change is seen.
 */
export interface UserChange {
  passwordHash?: string;
  admin?: boolean;
  disabled?: boolean;
  addOrgIds?: string[];
  removeOrgIds?: string[];
  endSessions: boolean;
}

/** A signed-in browser. Only the SHA-256 of its token is stored. */
export interface SessionRecord {
  tokenHash: Buffer;
  userId: string;
  /** Sent back in every form; compared with what a state change carries. */
  csrfToken: string;
  createdAt: number;
  lastSeenAt: number;
}

/** A key sign-in attempts are counted under (an account, a client address), with the attempts it allows before blocking. */
export interface LoginKey {
  key: string;
  free: number;
}

/** How sign-in attempts are counted: the window, and the block an attempt past the free ones earns (the domain's rule). */
export interface LoginRule {
  windowMs: number;
  /** The block, in ms, earned by the n-th attempt past the free ones (n ≥ 1). */
  blockMs: (n: number) => number;
}

/** Whether a sign-in attempt may have its password checked, or until when it is refused. */
export type LoginAttempt = { allowed: true } | { allowed: false; blockedUntil: number };

/** Accounts, memberships, sessions and sign-in throttling. */
export interface AccountStore {
  /** Adds the user and its memberships together, unless the email is taken (emails are stored lower-cased). */
  createUser(user: UserRecord, orgIds: string[]): Promise<'ok' | 'email_taken'>;
  userByEmail(email: string): Promise<UserRecord | null>;
  getUser(id: string): Promise<UserRecord | null>;
  /** Every user with its memberships, by email. */
  listUsers(): Promise<UserListing[]>;
  /** Applies the change in one transaction; 'not_found' when there is no such user (nothing is changed then). */
  updateUser(id: string, change: UserChange): Promise<'ok' | 'not_found'>;
  /** Deletes the user, its memberships and every session of it in one transaction; false when there was none. */
  deleteUser(id: string): Promise<boolean>;
  /** The organizations the user is a member of (deleted ones left out). */
  orgIdsOf(userId: string): Promise<string[]>;
  createSession(s: SessionRecord): Promise<void>;
  getSession(tokenHash: Buffer): Promise<SessionRecord | null>;
  touchSession(tokenHash: Buffer, at: number): Promise<void>;
  deleteSession(tokenHash: Buffer): Promise<void>;
  /**
   * Counts one sign-in attempt under every key, before its password is
   * checked, unless one of the keys is blocked at `at`: then nothing is
   * counted, nothing is written (no row for a key that had none), and the
   * answer is the latest block's end. A key's count starts
   * over once `rule.windowMs` has passed since its first attempt; a key whose
   * count passes its `free` attempts is blocked until `at + rule.blockMs(count
   * - free)` (a block is never shortened). The attempt that sets a block is
   * itself allowed. Atomic across servers sharing the database: of attempts
   * made at once, each sees the counts and blocks of those before it.
   */
  noteLoginAttempt(keys: LoginKey[], at: number, rule: LoginRule): Promise<LoginAttempt>;
  /** The latest end of a block on any of the keys (0: none), read without counting or writing anything. */
  loginBlockedUntil(keys: string[]): Promise<number>;
  /** Takes one attempt off the key's count (one that turned out right); a block it set stays. */
  forgiveLoginAttempt(key: string): Promise<void>;
  /** Forgets the key's count and block (the account's right password). */
  clearLoginFailures(key: string): Promise<void>;
  /**
   * Deletes sessions created before `createdBefore` or last seen before
   * `seenBefore`, and failure counts begun before `failuresBefore` whose
   * block (if any) is over by `now`: what no request can use any more. At
   * most `limit` rows of each a call (a step never waits on a big delete);
   * the answer is how many rows went.
   */
  purgeExpired(opts: { createdBefore: number; seenBefore: number; failuresBefore: number; now: number; limit: number }): Promise<number>;
}

/** Items stored for one UTC day ("YYYY-MM-DD"), as the project chart shows them. */
export interface DayCount {
  day: string;
  events: number;
}

/** Where a page of people ends: the last person's creation time and id (the list's order). */
export interface PersonCursor {
  createdAt: number;
  id: string;
}

/** One person as a list of people shows it. */
export interface PersonListing {
  id: string;
  createdAt: number;
  /** A few of its distinct ids (merged persons' included), in byte order; `moreIds` says whether it has others. */
  distinctIds: string[];
  moreIds: boolean;
}

/** What the console's Groups page asks for: one type or all, keys starting with a prefix ('' for any). */
export interface GroupPageQuery {
  groupType: string | null;
  keyPrefix: string;
  limit: number;
}

/** A group as the console's Groups page lists it, with its members counted (up to a bound: `moreMembers` says there are more). */
export interface GroupListing {
  groupType: string;
  groupKey: string;
  traits: Record<string, unknown>;
  createdAt: number;
  members: number;
  moreMembers: boolean;
}

/**
 * The persons a read of a person's events looks in at most: itself and
 * those merged into it (each one range of the store's keys); past that,
 * PersonEvents.complete is false.
 */
export const MERGED_READ = 32;

/**
 * The newest events kept by person, for each person, in the store's keys:
 * what the console shows. A read asking for more may miss older ones.
 */
export const PERSON_EVENTS_KEPT = 20;

/** A person's newest events, and whether they are surely its newest. */
export interface PersonEvents {
  events: StoredEvent[];
  /**
   * False while the fold is far behind (the first start after the upgrade
   * folds the events already stored) or the person has more merged persons
   * than are read (MERGED_READ): newer events may then exist beyond those shown.
   */
  complete: boolean;
}

/** Read-only lists and summaries. */
export interface ListingStore {
  /** Live organizations, by name then id. */
  listOrgs(): Promise<Org[]>;
  /** Live projects of live organizations (of one org when given), by name then id. */
  listProjects(orgId: string | null): Promise<Project[]>;
  /** Live sources of a live project, by name then id. */
  listSources(projectId: string): Promise<Source[]>;
  /** Up to `limit` distinct ids starting with `prefix`, in byte order, with their persons. */
  searchDistinctIds(projectId: string, prefix: string, limit: number): Promise<{ distinctId: string; personId: string }[]>;
  /**
   * The project's people, newest first (by creation time, then id, both
   * descending), `limit` of them after `after` (null: from the newest).
   * Persons merged into another are left out: they read as that person.
   * A keyset page on an index, so page 1,000 costs what page 1 does.
   * `next` is the cursor of the following page, null on the last.
   */
  listPersons(projectId: string, limit: number, after: PersonCursor | null): Promise<{ persons: PersonListing[]; next: PersonCursor | null }>;
  /**
   * A person's newest events (merged persons' included), found by person:
   * the events folded into the store's keys by person off the request path
   * (PersonEventsFold), and those stored since, read from the events table
   * (docs/design.md, "A person's events").
   */
  personEvents(projectId: string, personId: string, limit: number): Promise<PersonEvents>;
  /**
   * How many people the project has, merged persons left out (they read as
   * the one they joined), as listPersons lists them: counted from an index
   * alone, off the connection that writes.
   */
  countPersons(projectId: string): Promise<number>;
  /** The project's group types, in byte order. */
  groupTypes(projectId: string): Promise<string[]>;
  /**
   * Up to `limit` groups by type then key (byte order), of one type or all,
   * whose key starts with the prefix; each with its traits and members
   * counted, off the connection that writes.
   */
  groupPage(projectId: string, q: GroupPageQuery): Promise<GroupListing[]>;
}
