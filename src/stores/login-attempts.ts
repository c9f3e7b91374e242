import type { LoginAttempt, LoginKey, LoginRule } from './port-console.js';

/** One key's row of sign-in attempts, as every engine keeps it. */
export interface LoginCount {
  failures: number;
  firstAt: number;
  blockedUntil: number;
}

/**
 * noteLoginAttempt's arithmetic, the same on every engine: from the rows as
 * found (null where a key has none), the decision and, when the attempt is
 * counted, each key's new row. The engine reads and writes them as one
 * atomic step.
 */
export function countLoginAttempt(
  found: (LoginCount | null)[],
  keys: LoginKey[],
  at: number,
  rule: LoginRule,
): { attempt: LoginAttempt; rows: LoginCount[] | null } {
  const blockedUntil = Math.max(0, ...found.map((f) => f?.blockedUntil ?? 0));
  if (blockedUntil > at) return { attempt: { allowed: false, blockedUntil }, rows: null };
  const rows = keys.map((k, i) => {
    const f = found[i] ?? null;
    // A count older than the window starts over.
    const current = f !== null && f.firstAt > at - rule.windowMs ? f : null;
    const failures = (current?.failures ?? 0) + 1;
    const block = failures > k.free ? at + rule.blockMs(failures - k.free) : 0;
    return { failures, firstAt: current?.firstAt ?? at, blockedUntil: Math.max(f?.blockedUntil ?? 0, block) };
  });
  return { attempt: { allowed: true }, rows };
}
