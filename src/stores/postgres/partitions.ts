import type pg from 'pg';

const DAY_MS = 86_400_000;
/** Days made ahead of the clock, so a new day's events never start in the default partition. */
const DAYS_AHEAD = 2;
/** Days made behind it: a valid timestamp is at most 7 days old (pipeline/timestamp.ts), plus one for time zones of doubt. */
const DAYS_BEHIND = 8;

/**
 * Makes sure the day tables of events exist for [today - 8 days, today + 2 days].
 * Run at start-up and then every hour by each server; the database function
 * takes a lock and checks again, so servers doing it at once are harmless.
 * A day that cannot be made now (its lock is busy) is tried on the next run;
 * meanwhile its rows go to the default partition, which stays correct.
 */
export async function ensureDayPartitions(pool: pg.Pool, now: number): Promise<void> {
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  let failure: unknown = null;
  for (let d = -DAYS_BEHIND; d <= DAYS_AHEAD; d++) {
    try {
      await pool.query('SELECT inlet_ensure_event_partition($1::bigint)', [today + d * DAY_MS]);
    } catch (e) {
      failure ??= e;
    }
  }
  if (failure !== null) throw failure;
}
