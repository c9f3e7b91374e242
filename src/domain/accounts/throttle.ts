import type { AccountStore } from '../../stores/port-console.js';

/** Failures are counted over this window; an older count starts over. */
export const FAILURE_WINDOW_MS = 15 * 60_000;

/** Failures allowed before each further one blocks sign-in for a while, per account and per client address. */
export const FREE_FAILURES = { email: 5, address: 30 } as const;

/** The longest block: doubling stops here. */
export const MAX_BLOCK_MS = 15 * 60_000;

const emailKey = (email: string): string => `email:${email}`;
const addressKey = (address: string): string => `ip:${address}`;

/**
 * Slows down password guessing: past the free failures, each failure blocks
 * sign-in under that account (or client address) for 1 s, then 2 s, 4 s, …
 * up to 15 minutes. Counts live in the store, so every server sharing it
 * counts together.
 */
export class LoginThrottle {
  constructor(private readonly accounts: AccountStore) {}

  /** Epoch ms until which sign-in for this email or from this address is refused; 0 when it is not. */
  blockedUntil(email: string, address: string): Promise<number> {
    return this.accounts.loginBlockedUntil([emailKey(email), addressKey(address)]);
  }

  async failed(email: string, address: string, now: number): Promise<void> {
    const keys: [string, number][] = [
      [emailKey(email), FREE_FAILURES.email],
      [addressKey(address), FREE_FAILURES.address],
    ];
    for (const [key, free] of keys) {
      const failures = await this.accounts.noteLoginFailure(key, now, FAILURE_WINDOW_MS);
      if (failures > free) await this.accounts.blockLogin(key, now + blockFor(failures - free));
    }
  }

  /** A correct password clears the account's count (not the address's: one success must not unlock guessing elsewhere). */
  succeeded(email: string): Promise<void> {
    return this.accounts.clearLoginFailures(emailKey(email));
  }
}

/** The block after the n-th failure past the free ones. */
export function blockFor(n: number): number {
  return Math.min(1000 * 2 ** Math.min(n - 1, 20), MAX_BLOCK_MS);
}
