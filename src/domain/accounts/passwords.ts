import { randomBytes, timingSafeEqual } from 'node:crypto';
import { deriveKey } from './password-thread.js';

/** Shortest password an account may have. */
export const MIN_PASSWORD_LENGTH = 12;

/** The sentence refusing a password as a new one, or null when it will do. */
export function passwordProblem(password: string): string | null {
  return [...password].length < MIN_PASSWORD_LENGTH ? `The password must be at least ${MIN_PASSWORD_LENGTH} characters long.` : null;
}

// scrypt with N=2^15, r=8: 32 MiB and some tens of ms a hash, OWASP's floor.
const N = 2 ** 15;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;
const MAX_MEM = 64 * 1024 * 1024;

function derive(password: string, salt: Buffer, n: number, r: number, p: number): Promise<Buffer> {
  return deriveKey(password.normalize('NFC'), salt, KEY_LENGTH, { N: n, r, p, maxmem: MAX_MEM });
}

/** A self-describing hash: `scrypt$N$r$p$salt$key`, salt and key in base64. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await derive(password, salt, N, R, P);
  return ['scrypt', N, R, P, salt.toString('base64'), key.toString('base64')].join('$');
}

/** Whether `password` matches `stored`, compared in constant time. A malformed hash never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [n, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  const salt = Buffer.from(parts[4]!, 'base64');
  const want = Buffer.from(parts[5]!, 'base64');
  if (want.length !== KEY_LENGTH || ![n, r, p].every(Number.isSafeInteger) || n > N * 4) return false;
  const got = await derive(password, salt, n, r, p);
  return timingSafeEqual(got, want);
}

