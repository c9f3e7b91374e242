/**
 * When a failed batch is tried again: after 1 s, then twice as long each
 * time, up to 5 minutes, for ever; a receiver's Retry-After is honoured, up
 * to the same 5 minutes (a receiver cannot stop delivery for longer than a
 * pause would). A little jitter keeps servers' retries from meeting.
 *
 * Never sooner than 1 s, whatever Retry-After says: a receiver answering
 * 503 with `Retry-After: 0` was otherwise tried again at once, about 300
 * times a second, for as long as it kept saying so.
 */
export const FIRST_RETRY_MS = 1000;
export const MAX_RETRY_MS = 5 * 60_000;

/** The wait before attempt `failures + 1`, after `failures` failed ones in a row: from 1 s to 5 minutes. */
export function retryDelay(failures: number, retryAfterMs: number | null, random: () => number = Math.random): number {
  if (retryAfterMs !== null) return Math.min(Math.max(retryAfterMs, FIRST_RETRY_MS), MAX_RETRY_MS);
  const base = Math.min(FIRST_RETRY_MS * 2 ** Math.max(0, failures - 1), MAX_RETRY_MS);
  return Math.max(Math.round(base * (0.8 + 0.2 * random())), FIRST_RETRY_MS);
}
