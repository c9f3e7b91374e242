import type { SystemRun, WorkloadFigures } from './measure.js';
import type { StorageFigures } from './rows.js';

/** One target of bench/README.md ("Targets"), checked against one store's run. */
export interface TargetResult {
  store: string;
  target: string;
  value: number;
  threshold: number;
  holds: 'at least' | 'under';
  pass: boolean;
  /** False where no such target is set for this store: shown, not judged. */
  required: boolean;
}

export interface StoreResult {
  run: SystemRun;
  /** The HTTP baseline as measured around this store's phases (null without baselines). */
  http: SystemRun | null;
  storage: StorageFigures | null;
  /** Per workload: events/s over the HTTP baseline's, and over the storage baseline's rows/s. */
  ratios: Record<string, { http: number | null; storage: number | null }>;
}

export function ratiosOf(run: SystemRun, http: SystemRun | null, storage: StorageFigures | null): StoreResult['ratios'] {
  const out: StoreResult['ratios'] = {};
  for (const [name, w] of Object.entries(run.workloads)) {
    const h = http?.workloads[name as keyof SystemRun['workloads']];
    out[name] = {
      http: h !== undefined && h.eventsPerSec > 0 && name !== 'big_at_80' ? w.eventsPerSec / h.eventsPerSec : null,
      storage: storage !== null && storage.rowsPerSec > 0 ? w.eventsPerSec / storage.rowsPerSec : null,
    };
  }
  return out;
}

/** The targets of bench/README.md, for one store. */
export function checkTargets(store: string, r: StoreResult): TargetResult[] {
  const embedded = store === 'sqlite';
  const out: TargetResult[] = [];
  const add = (target: string, value: number | null | undefined, threshold: number, holds: TargetResult['holds'], required: boolean): void => {
    if (value === null || value === undefined) return;
    out.push({ store, target, value, threshold, holds, pass: holds === 'at least' ? value >= threshold : value < threshold, required });
  };
  // The two big-batch ratios are targets for the embedded store only.
  add('big batches: events/s over the HTTP baseline', r.ratios.big?.http, 0.1, 'at least', embedded);
  add('big batches: events/s over the storage baseline rows/s', r.ratios.big?.storage, 0.3, 'at least', embedded);
  add('small requests: requests/s over the HTTP baseline', r.ratios.small?.http, 0.3, 'at least', true);
  add('p99 ms of a 500-item batch at 80% of the peak rate', r.run.workloads.big_at_80?.p99Ms, 50, 'under', true);
  add('peak RSS MiB of the server, whole run', r.run.lifetimePeakRssMiB || null, 300, 'under', true);
  return out;
}

// "other %": CPU used meanwhile by processes other than the server and the
// load generator, in % of one core; a database server counts here, anything
// else is noise in the row.
const COLUMNS = ['system', 'workload', 'events/s', 'req/s', 'p50 ms', 'p99 ms', 'RSS MiB', 'CPU s/M ev', 'x HTTP', 'x storage', 'other %'];

/** The table printed at the end of a run: per store, its baselines, then Inlet on it. */
export function table(stores: Record<string, StoreResult>): string {
  const rows: string[][] = [];
  const workloadRow = (system: string, w: WorkloadFigures, ratio?: { http: number | null; storage: number | null }): string[] => [
    system,
    w.workload === 'big_at_80' ? `big @${w.offeredPerSec!.toFixed(0)}/s` : w.workload,
    int(w.eventsPerSec),
    int(w.requestsPerSec),
    w.p50Ms.toFixed(1),
    w.p99Ms.toFixed(1),
    w.peakRssMiB.toFixed(0),
    w.cpuSecPerMillionEvents.toFixed(1),
    ratio?.http == null ? '' : `${ratio.http.toFixed(3)}x`,
    ratio?.storage == null ? '' : `${ratio.storage.toFixed(3)}x`,
    ((100 * w.otherCpuSec) / w.seconds).toFixed(0),
  ];
  const storageRow = (s: StorageFigures): void => {
    rows.push([
      `${s.engine} storage`,
      `${s.rowsPerTransaction}/tx x${s.writers}`,
      int(s.rowsPerSec),
      int(s.transactions / s.seconds),
      '',
      '',
      s.peakRssMiB.toFixed(0),
      ((s.cpuSec / s.rows) * 1e6).toFixed(1),
      '',
      '',
      '',
    ]);
  };
  for (const [store, r] of Object.entries(stores)) {
    if (r.http !== null) for (const w of Object.values(r.http.workloads)) rows.push(workloadRow('http baseline', w));
    if (r.storage !== null) storageRow(r.storage);
    for (const w of Object.values(r.run.workloads)) rows.push(workloadRow(`inlet ${store}`, w, r.ratios[w.workload]));
  }
  const all = [COLUMNS, ...rows];
  const widths = COLUMNS.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  const line = (r: string[]): string => r.map((c, i) => (i < 2 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(COLUMNS), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)].join('\n');
}

export function targetLines(targets: TargetResult[]): string {
  return targets
    .map((t) => {
      const verdict = !t.required ? 'info' : t.pass ? 'PASS' : 'FAIL';
      const v = t.target.startsWith('p99') || t.target.startsWith('peak') ? t.value.toFixed(1) : `${t.value.toFixed(3)}x`;
      return `${verdict.padEnd(4)}  ${t.store.padEnd(8)}  ${t.target}: ${v} (${t.holds} ${t.threshold})`;
    })
    .join('\n');
}

function int(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}
