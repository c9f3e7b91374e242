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
   * Counts one failed sign-in under `key` and returns the failures counted
   * since the first of a window of `windowMs` (an older count starts over).
   * Atomic, so servers sharing the database count together.
   */
  noteLoginFailure(key: string, at: number, windowMs: number): Promise<number>;
  /** Refuses sign-ins under `key` until `until`. */
  blockLogin(key: string, until: number): Promise<void>;
  /** The latest time until which any of `keys` is blocked, or 0. */
  loginBlockedUntil(keys: string[]): Promise<number>;
  clearLoginFailures(key: string): Promise<void>;
  /**
   * Deletes sessions created before `createdBefore` or last seen before
   * `seenBefore`, and failure counts begun before `failuresBefore` whose
   * block (if any) is over by `now`: what no request can use any more.
   */
  purgeExpired(opts: { createdBefore: number; seenBefore: number; failuresBefore: number; now: number }): Promise<void>;
}

/** Events stored for one UTC day ("YYYY-MM-DD"), by the events' own timestamps. */
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

/** Read-only lists and summaries. */
export interface ListingStore {
  /** Live organizations, by name then id. */
  listOrgs(): Promise<Org[]>;
  /** Live projects of live organizations (of one org when given), by name then id. */
  listProjects(orgId: string | null): Promise<Project[]>;
  /** Live sources of a live project, by name then id. */
  listSources(projectId: string): Promise<Source[]>;
  /** Events per day with timestamps in [from, to) (epoch ms), days without events left out. */
  eventsPerDay(projectId: string, from: number, to: number): Promise<DayCount[]>;
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
   * A person's newest events (merged persons' included), looked for among the
   * project's `scan` most recently stored events: bounded work on any store size.
   */
  personEvents(projectId: string, personId: string, limit: number, scan: number): Promise<StoredEvent[]>;
}
