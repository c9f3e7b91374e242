import type { AccountStore, LoginAttempt, LoginRule } from '../../stores/port-console.js';
import { sha256 } from '../sha256.js';
import { isStorableText } from '../storable.js';

/** Attempts are counted over this window; an older count starts over. */
export const FAILURE_WINDOW_MS = 15 * 60_000;

/** Attempts allowed before each further one blocks sign-in for a while, per account and per client address. */
export const FREE_FAILURES = { email: 5, address: 30 } as const;

/** The longest block: doubling stops here. */
export const MAX_BLOCK_MS = 15 * 60_000;

const emailKey = (email: string): string => `email:${email}`;
/**
 * An address is a few dozen characters, but behind a proxy that passes on
 * what a client wrote in X-Forwarded-For it can be any text: one no engine
 * could keep as a key (too long for an index row, U+0000) is counted under
 * its hash instead.
 */
const addressKey = (address: string): string =>
  `ip:${address.length <= MAX_ADDRESS_LENGTH && isStorableText(address) ? address : `sha256:${sha256(address).toString('hex')}`}`;
const MAX_ADDRESS_LENGTH = 100;

const RULE: LoginRule = { windowMs: FAILURE_WINDOW_MS, blockMs: blockFor };

/**
 * Slows down password guessing: past the free attempts, each attempt blocks
 * sign-in under that account (or client address) for 1 s, then 2 s, 4 s, …
 * up to 15 minutes. An attempt is counted as it arrives, before its password
 * is checked, in one atomic step with the check of the blocks: guesses sent
 * in parallel are counted one after another, and those past the free ones
 * are refused without being hashed (they were all hashed while the count was
 * written only after each hash). Counts live in the store, so every server
 * sharing it counts together.
 */
export class LoginThrottle {
  constructor(private readonly accounts: AccountStore) {}

  /** Counts an attempt, unless sign-in for this email or from this address is blocked now. */
  attempt(email: string, address: string, now: number): Promise<LoginAttempt> {
    return this.accounts.noteLoginAttempt(
      [
        { key: emailKey(email), free: FREE_FAILURES.email },
        { key: addressKey(address), free: FREE_FAILURES.address },
      ],
      now,
      RULE,
    );
  }

  /**
   * Until when sign-in from this address is blocked (0: it is not), for an
   * email no account has: such an attempt is not counted at all. A count per
   * unknown email was a row per random email a guesser sent, and guarded no
   * account; a count per address was a write per guess, hundreds at once
   * that batches waited behind. Attempts at real accounts still count
   * against their address.
   */
  async addressBlockedUntil(address: string): Promise<number> {
    return this.accounts.loginBlockedUntil([addressKey(address)]);
  }

  /**
   * A correct password clears the account's count, and takes this attempt
   * off the address's (not the whole count: one success must not unlock
   * guessing elsewhere).
   */
  async succeeded(email: string, address: string): Promise<void> {
    await this.accounts.clearLoginFailures(emailKey(email));
    await this.accounts.forgiveLoginAttempt(addressKey(address));
  }
}

/** The block after the n-th attempt past the free ones. */
export function blockFor(n: number): number {
  return Math.min(1000 * 2 ** Math.min(n - 1, 20), MAX_BLOCK_MS);
}
