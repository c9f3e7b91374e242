/** The figures an A/B run keeps of each side's phase, and the B/A summary over rounds. */
import { PACING_SHARE } from './tenants.js';

export interface AbFigures {
  eventsPerSec: number;
  usPerEvent: number;
  /** The busiest thread's share of usPerEvent (measure.ts, Row.requestUsPerEvent); null or absent where not measured. */
  requestUsPerEvent?: number | null;
  p99Ms: number;
  /** 429 answers and failed requests: a phase that had any is not a clean comparison. */
  rateLimited: number;
  failures: number;
  /** Share of the connections' time the load generator waited for a tenant's room (tenants); past PACING_SHARE the pair is its pacing. */
  heldShare?: number;
}

/** One phase measured on both sides in one round. */
export interface AbPair {
  round: number;
  workload: string;
  a: AbFigures;
  b: AbFigures;
}

export interface Spread {
  min: number;
  median: number;
  max: number;
  n: number;
}

/** Min, median and max; null for no values. */
export function spread(xs: readonly number[]): Spread | null {
  const v = xs.filter((x) => Number.isFinite(x)).sort((p, q) => p - q);
  if (v.length === 0) return null;
  const mid = Math.floor(v.length / 2);
  const median = v.length % 2 === 1 ? v[mid]! : (v[mid - 1]! + v[mid]!) / 2;
  return { min: v[0]!, median, max: v[v.length - 1]!, n: v.length };
}

/** B over A of one figure, per round; rounds where A is 0 give no ratio. */
export function ratiosOf(pairs: readonly AbPair[], figure: keyof Pick<AbFigures, 'eventsPerSec' | 'usPerEvent' | 'requestUsPerEvent' | 'p99Ms'>): number[] {
  const out: number[] = [];
  for (const p of pairs) {
    const a = p.a[figure];
    const b = p.b[figure];
    if (typeof a === 'number' && a > 0 && typeof b === 'number') out.push(b / a);
  }
  return out;
}

export interface AbSummaryRow {
  workload: string;
  eventsPerSec: Spread | null;
  usPerEvent: Spread | null;
  requestUsPerEvent: Spread | null;
  p99Ms: Spread | null;
}

/** Per workload, in the order first seen: the spread of B/A over the rounds. */
export function summarise(pairs: readonly AbPair[]): AbSummaryRow[] {
  const names = [...new Set(pairs.map((p) => p.workload))];
  return names.map((workload) => {
    const mine = pairs.filter((p) => p.workload === workload);
    return {
      workload,
      eventsPerSec: spread(ratiosOf(mine, 'eventsPerSec')),
      usPerEvent: spread(ratiosOf(mine, 'usPerEvent')),
      requestUsPerEvent: spread(ratiosOf(mine, 'requestUsPerEvent')),
      p99Ms: spread(ratiosOf(mine, 'p99Ms')),
    };
  });
}

/** The per-round lines and the summary, as printed at the end of an A/B run. */
export function abTables(pairs: readonly AbPair[]): string {
  const int = (n: number): string => Math.round(n).toLocaleString('en-US');
  const rows: string[][] = [['round', 'workload', 'A ev/s', 'B ev/s', 'A µs/ev', 'B µs/ev', 'A req µs/ev', 'B req µs/ev', 'A p99 ms', 'B p99 ms', 'B/A ev/s', 'B/A µs/ev', 'B/A req µs/ev', 'note']];
  const us = (x: number | null | undefined): string => (typeof x === 'number' ? x.toFixed(1) : '-');
  for (const p of pairs) {
    const dirty = p.a.rateLimited + p.a.failures + p.b.rateLimited + p.b.failures;
    const held = Math.max(p.a.heldShare ?? 0, p.b.heldShare ?? 0);
    const notes = [
      dirty > 0 ? `429s or failed requests: A ${p.a.rateLimited}/${p.a.failures}, B ${p.b.rateLimited}/${p.b.failures}` : '',
      held > PACING_SHARE ? `load generator waited for the limits: A ${pct(p.a.heldShare)}, B ${pct(p.b.heldShare)} of its time` : '',
    ].filter((n) => n !== '');
    rows.push([
      String(p.round),
      p.workload,
      int(p.a.eventsPerSec),
      int(p.b.eventsPerSec),
      p.a.usPerEvent.toFixed(1),
      p.b.usPerEvent.toFixed(1),
      us(p.a.requestUsPerEvent),
      us(p.b.requestUsPerEvent),
      p.a.p99Ms.toFixed(1),
      p.b.p99Ms.toFixed(1),
      p.a.eventsPerSec > 0 ? (p.b.eventsPerSec / p.a.eventsPerSec).toFixed(3) : '-',
      p.a.usPerEvent > 0 ? (p.b.usPerEvent / p.a.usPerEvent).toFixed(3) : '-',
      ratiosOf([p], 'requestUsPerEvent')[0]?.toFixed(3) ?? '-',
      notes.join('; '),
    ]);
  }
  const s = (x: Spread | null): string => (x === null ? '-' : `${x.min.toFixed(3)} / ${x.median.toFixed(3)} / ${x.max.toFixed(3)}`);
  const summary: string[][] = [['workload', 'B/A events/s (min / median / max)', 'B/A CPU µs/event', 'B/A request thread µs/event', 'B/A p99', 'rounds']];
  for (const r of summarise(pairs)) summary.push([r.workload, s(r.eventsPerSec), s(r.usPerEvent), s(r.requestUsPerEvent), s(r.p99Ms), String(r.eventsPerSec?.n ?? 0)]);
  return `${align(rows, 2, true)}\n\n${align(summary, 1)}`;
}

function pct(share: number | undefined): string {
  return `${((share ?? 0) * 100).toFixed(0)}%`;
}

/** Columns padded to one width each: the first `left` columns (and a last one of notes) to the left, the rest to the right. */
export function align(rows: readonly string[][], left: number, noteLast = false): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: readonly string[]): string =>
    r
      .map((c, i) => (i < left || (noteLast && i === r.length - 1) ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(rows[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}
