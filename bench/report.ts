import { align } from './ab-summary.js';
import { type Row, pacingNote } from './measure.js';
import type { StorageFigures } from './rows.js';

/** One store's part of a run: the HTTP baseline measured around its phases, its storage baseline, and Inlet on it. */
export interface Section {
  engine: 'sqlite' | 'postgres';
  http: Row[];
  storage: StorageFigures | null;
  rows: Row[];
}

/** Events/s over the HTTP baseline's for the same workload, measured around this phase; null where there is none. */
export function httpRatio(s: Section, row: Row): number | null {
  const h = s.http.find((x) => x.workload === row.workload);
  return h !== undefined && h.eventsPerSec > 0 ? row.eventsPerSec / h.eventsPerSec : null;
}

export function storageRatio(s: Section, row: Row): number | null {
  return s.storage !== null && s.storage.rowsPerSec > 0 ? row.eventsPerSec / s.storage.rowsPerSec : null;
}

const COLUMNS = ['system', 'workload', 'events/s', 'req/s', 'p50 ms', 'p99 ms', '429', 'held %', 'RSS MiB', 'srv µs/ev', 'db µs/ev', 'x HTTP', 'x storage', 'other %'];

/** The table printed at the end of a run: per store, its baselines, then Inlet on it. */
export function table(sections: readonly Section[]): string {
  const rows: string[][] = [COLUMNS];
  const ratio = (r: number | null): string => (r === null ? '' : `${r.toFixed(3)}x`);
  const rowOf = (r: Row, s: Section | null): string[] => [
    r.system,
    r.label,
    int(r.eventsPerSec),
    int(r.requestsPerSec),
    r.p50Ms.toFixed(1),
    r.p99Ms.toFixed(1),
    String(r.rateLimited),
    heldCell(r),
    r.peakRssMiB.toFixed(0),
    r.serverUsPerEvent.toFixed(1),
    r.dbUsPerEvent === null ? '' : r.dbUsPerEvent.toFixed(1),
    s === null ? '' : ratio(httpRatio(s, r)),
    s === null ? '' : ratio(storageRatio(s, r)),
    ((100 * r.otherCpuSec) / r.seconds).toFixed(0),
  ];
  for (const s of sections) {
    for (const h of s.http) rows.push(rowOf(h, null));
    if (s.storage !== null) {
      const f = s.storage;
      rows.push([
        `${f.engine} storage`,
        `${f.rowsPerTransaction}/tx x${f.writers}`,
        int(f.rowsPerSec),
        int(f.transactions / f.seconds),
        '',
        '',
        '',
        '',
        f.peakRssMiB.toFixed(0),
        ((f.cpuSec / f.rows) * 1e6).toFixed(1),
        f.dbCpuSec === null ? '' : ((f.dbCpuSec / f.rows) * 1e6).toFixed(1),
        '',
        '',
        '',
      ]);
    }
    for (const r of s.rows) rows.push(rowOf(r, s));
  }
  return align(rows, 2);
}

/**
 * The share of its time the load generator held the phase back to stay
 * within the limits; marked `!` past PACING_SHARE, where the row's events/s is
 * that pacing and not the server's speed. Blank for phases without tenants.
 */
export function heldCell(r: Pick<Row, 'heldBack'>): string {
  if (r.heldBack === undefined) return '';
  const pct = (r.heldBack.share * 100).toFixed(r.heldBack.share > 0 && r.heldBack.share < 0.01 ? 1 : 0);
  return pacingNote(r) === null ? pct : `${pct} !`;
}

function int(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}
