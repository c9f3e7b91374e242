/** Days a project keeps raw events unless it sets another retention. */
export const DEFAULT_RETENTION_DAYS = 400;

const DAY_MS = 86_400_000;

/** Events with a timestamp below this have outlived a retention of `days` at `now`. */
export function retentionCutoff(now: number, days: number): number {
  return now - days * DAY_MS;
}
