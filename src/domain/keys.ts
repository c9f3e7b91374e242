import { timingSafeEqual } from 'node:crypto';
import type { KeyRecord } from '../stores/port.js';
import { randomBase62 } from './ids.js';
import { sha256 } from './sha256.js';

export const KEY_PREFIX = 'srv_live_';
const KEY_FORM = /^srv_live_[0-9A-Za-z]{32}$/;
/** A source may hold at most this many keys that still work. */
export const MAX_WORKING_KEYS = 2;

export const GRACE_PERIODS = { now: 0, '24h': 24 * 3600_000, '7d': 7 * 24 * 3600_000 } as const;
export type Grace = keyof typeof GRACE_PERIODS;

export type KeyStatus = 'active' | 'expiring' | 'revoked' | 'expired';

/** A fresh secret key: shown once, then only its hash is kept. */
export function generateKey(): string {
  return KEY_PREFIX + randomBase62(32);
}

export function hashKey(key: string): Buffer {
  return sha256(key);
}

/** Whether a string has the form of a key, so malformed ones never reach the store. */
export function isKeyShaped(s: string): boolean {
  return KEY_FORM.test(s);
}

/**
 * Compares the stored hash with the presented key's hash in constant time.
 * The lookup is by hash, whose value an attacker cannot steer byte by byte,
 * so nothing about a real key leaks through timing.
 */
export function hashesMatch(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export function keyStatus(k: Pick<KeyRecord, 'revokedAt' | 'expiresAt'>, now: number): KeyStatus {
  if (k.revokedAt !== null) return 'revoked';
  if (k.expiresAt !== null) return k.expiresAt <= now ? 'expired' : 'expiring';
  return 'active';
}

export function keyWorks(k: Pick<KeyRecord, 'revokedAt' | 'expiresAt'>, now: number): boolean {
  const s = keyStatus(k, now);
  return s === 'active' || s === 'expiring';
}

export type BearerResult = { kind: 'missing' } | { kind: 'token'; token: string };

/**
 * Reads "Authorization: Bearer <token>". The scheme is case-insensitive
 * (RFC 9110); anything else, or an empty token, counts as no key sent.
 */
export function readBearer(header: string | undefined): BearerResult {
  if (header === undefined) return { kind: 'missing' };
  const m = /^bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return m === null ? { kind: 'missing' } : { kind: 'token', token: m[1]! };
}

/**
 * Whether one more key fits in a source that holds `keys`, once `replaces`
 * (if any) is set to expire. The store runs it inside the transaction that adds the key.
 */
export function roomForKey(
  keys: Pick<KeyRecord, 'id' | 'revokedAt' | 'expiresAt'>[],
  opts: { now: number; maxWorking: number; replaces?: { keyId: string; expiresAt: number } },
): boolean {
  const working = keys.filter((k) =>
    keyWorks(opts.replaces?.keyId === k.id ? { ...k, expiresAt: opts.replaces.expiresAt } : k, opts.now),
  );
  return working.length + 1 <= opts.maxWorking;
}
