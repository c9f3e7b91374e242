/**
 * The targets of a run (bench/README.md, "Targets"): each is a figure, a
 * threshold and a verdict. A target whose figure the run did not take (a
 * workload left out, no PostgreSQL, fewer events stored than it names) is
 * "not measured", never PASS.
 */

export type Verdict = 'PASS' | 'FAIL' | 'not measured';

export interface TargetSpec {
  id: string;
  text: string;
  threshold: number;
  holds: 'at most' | 'at least';
  unit: 'µs' | 'x' | 'ms' | 'MiB';
}

/** The events a store must hold for the full-store targets. */
export const FULL_STORE_EVENTS = 5_000_000;

export const TARGETS = {
  cpuBig: { id: 'cpu_big_sqlite', text: 'server CPU per event, 500-item batches (big), SQLite', threshold: 10, holds: 'at most', unit: 'µs' },
  bigHttp: { id: 'big_http_sqlite', text: 'big batches, SQLite, x HTTP baseline', threshold: 0.18, holds: 'at least', unit: 'x' },
  smallHttp: { id: 'small_http_sqlite', text: 'small requests, SQLite, x HTTP baseline', threshold: 0.5, holds: 'at least', unit: 'x' },
  p99Fresh: { id: 'p99_80_fresh', text: 'p99 of a 500-item batch at 80% of peak, fresh store', threshold: 50, holds: 'at most', unit: 'ms' },
  p99Full: { id: 'p99_80_full', text: 'p99 of a 500-item batch at 80% of peak, 5M stored', threshold: 50, holds: 'at most', unit: 'ms' },
  fullFresh: { id: 'full_over_fresh', text: 'events/s with 5M stored / fresh store', threshold: 0.8, holds: 'at least', unit: 'x' },
  pgTenants: { id: 'pg_tenants_storage', text: 'PostgreSQL, multi-tenant, two servers, x PG storage baseline', threshold: 0.45, holds: 'at least', unit: 'x' },
  keylessFlood: { id: 'keyless_flood', text: 'big batches beside 8 clients sending 1 MB bodies without a key, x big alone', threshold: 0.5, holds: 'at least', unit: 'x' },
  s3Ratio: { id: 's3_over_none', text: 'big with a webhook and an s3 destination attached, x without, SQLite', threshold: 0.8, holds: 'at least', unit: 'x' },
  s3Lag: { id: 's3_lag_80', text: 'their delivery lag at 80% of peak, largest in the phase (flat: within 5 s), SQLite', threshold: 5000, holds: 'at most', unit: 'ms' },
  peakRss: { id: 'peak_rss', text: 'peak RSS of a server (including with 5M stored)', threshold: 300, holds: 'at most', unit: 'MiB' },
} as const satisfies Record<string, TargetSpec>;

/** What a run measured for one target. */
export interface TargetInput {
  /** The figure, or null when the run did not take it. */
  value: number | null;
  /** Why the figure is missing (shown with "not measured"). */
  missing?: string;
  /**
   * Set when the figure was taken, but not under the whole condition the
   * target names (e.g. fewer events stored). The verdict is then "not
   * measured", except that a figure that can only grow with the rest of the
   * condition (a peak) fails when it already fails.
   */
  partial?: string;
  /** For `partial`: a failure of the part is a failure of the whole. */
  failureStands?: boolean;
}

export interface TargetResult {
  id: string;
  text: string;
  threshold: number;
  holds: TargetSpec['holds'];
  unit: TargetSpec['unit'];
  value: number | null;
  verdict: Verdict;
  note: string | null;
}

export function evaluate(spec: TargetSpec, input: TargetInput): TargetResult {
  const base = { id: spec.id, text: spec.text, threshold: spec.threshold, holds: spec.holds, unit: spec.unit, value: input.value };
  if (input.value === null || !Number.isFinite(input.value)) return { ...base, value: null, verdict: 'not measured', note: input.missing ?? null };
  const holds = spec.holds === 'at most' ? input.value <= spec.threshold : input.value >= spec.threshold;
  if (input.partial !== undefined) {
    if (!holds && input.failureStands === true) return { ...base, verdict: 'FAIL', note: input.partial };
    return { ...base, verdict: 'not measured', note: input.partial };
  }
  return { ...base, verdict: holds ? 'PASS' : 'FAIL', note: null };
}

export function formatValue(value: number, unit: TargetSpec['unit'], ratioDigits = 3): string {
  switch (unit) {
    case 'x':
      return `${value.toFixed(ratioDigits)}x`;
    case 'µs':
      return `${value.toFixed(1)} µs`;
    case 'ms':
      return `${value.toFixed(1)} ms`;
    case 'MiB':
      return `${value.toFixed(0)} MiB`;
  }
}

/** One line per target: verdict, what, figure against threshold, and why it is not measured when it is not. */
export function targetLines(results: readonly TargetResult[]): string {
  const fmtThreshold = (r: TargetResult): string => `${r.holds === 'at most' ? '≤' : '≥'} ${formatValue(r.threshold, r.unit, 2)}`;
  return results
    .map((r) => {
      const figure = r.value === null ? '-' : formatValue(r.value, r.unit);
      const note = r.note === null ? '' : ` (${r.note})`;
      return `${r.verdict.padEnd(12)}  ${r.text}: ${figure} (${fmtThreshold(r)})${note}`;
    })
    .join('\n');
}
