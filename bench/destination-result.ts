/** What `destination.ts` prints last, for `npm run bench`'s targets (run.ts). */
import type { TargetInput } from './targets.js';

/** What the run came to, on its last line after RESULT_PREFIX, for `npm run bench`'s targets (run.ts). */
export interface DestinationResult {
  /** Per round: events/s with the destinations over without, at the peak. */
  ratios: number[];
  /** Per round: the largest delivery lag seen at 80% of the peak, in ms. */
  lagMaxMs: number[];
  /** Per round: the events/s the paced phase reached over those it offered. */
  heldShares: number[];
}
export const RESULT_PREFIX = 'destination result: ';

/** The run's result from its output, or null when the output holds none. */
export function parseDestinationResult(out: string): DestinationResult | null {
  const line = out.split('\n').find((l) => l.startsWith(RESULT_PREFIX));
  return line === undefined ? null : (JSON.parse(line.slice(RESULT_PREFIX.length)) as DestinationResult);
}

/** The paced phase counts as holding its rate when it reached this share of it. */
export const HELD_SHARE = 0.95;

/** The largest lag at 80% of the peak, as a target's figure: taken under the whole condition only when every paced phase held its rate. */
export function lagInput(result: DestinationResult | null): TargetInput {
  if (result === null) return { value: null, missing: 's3 not run' };
  const value = Math.max(...result.lagMaxMs);
  const held = Math.min(...result.heldShares);
  // Short of the rate, the lag is that of less load: one already too large stands.
  if (held < HELD_SHARE) return { value, partial: `the paced load reached ${(held * 100).toFixed(0)}% of its rate`, failureStands: true };
  return { value };
}
