import { randomInt } from 'node:crypto';
import { hashPassword } from './passwords.js';

/** How many recent password checks the decoy's wait is drawn from. */
const KEPT = 32;

/**
 * The time a sign-in of an unknown email takes instead of a hash. It used to
 * hash against a decoy, so timing did not tell a wrong email from a wrong
 * password; but those hashes took the bound on checks at once
 * (accounts.ts), and wrong passwords for random emails kept it full: every
 * real sign-in was refused. Now an unknown email waits as long as one of the
 * recent real checks took (their wait on the hashing thread included, so the
 * wait follows the load as a hash does), drawn at random, with neither a hash
 * nor a place under the bound. Until a real check has been timed, one decoy
 * hash is timed instead, once.
 */
export class HashTiming {
  private readonly recent: number[] = [];
  private next = 0;
  private seeding: Promise<void> | null = null;

  /** Records how long a real password check took, in ms. */
  record(ms: number): void {
    if (this.recent.length < KEPT) this.recent.push(ms);
    else this.recent[this.next] = ms;
    this.next = (this.next + 1) % KEPT;
  }

  /** Resolves after about as long as a real password check takes now. */
  async waitLikeAHash(): Promise<void> {
    if (this.recent.length === 0) await (this.seeding ??= this.seed());
    const drawn = this.recent[randomInt(this.recent.length)]!;
    // ±10 %, so the wait repeats no recorded time exactly.
    const ms = drawn * (0.9 + Math.random() * 0.2);
    await new Promise((resolve) => setTimeout(resolve, ms));
  }

  private async seed(): Promise<void> {
    const started = performance.now();
    await hashPassword('a password no account has');
    if (this.recent.length === 0) this.record(performance.now() - started);
  }
}
