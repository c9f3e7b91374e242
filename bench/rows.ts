import { type BodyPool, type PoolSpec, ROUNDS, generatePool } from './payloads.js';

/** One item as the storage baselines write it. */
export interface BaselineRow {
  event: string;
  distinctId: string;
  personId: string;
  timestamp: number;
  insertId: string;
  properties: string;
}

export const BASELINE_PROJECT = 'prj_benchbaseline0000';
export const BASELINE_SOURCE = 'src_benchbaseline0000';

/**
 * The items of a pool as rows, repeats left out (a repeat stores nothing).
 * Identify items become rows too, so rows/s compares with Inlet's items/s.
 */
export function baselineRows(spec: PoolSpec): { rows: BaselineRow[]; pool: BodyPool } {
  const pool = generatePool({ ...spec, gzip: false });
  const seen = new Set<string>();
  const rows: BaselineRow[] = [];
  for (const raw of pool.raw) {
    const body = JSON.parse(raw.toString('utf8')) as { items: Record<string, any>[] };
    for (const item of body.items) {
      if (seen.has(item.insert_id)) continue;
      seen.add(item.insert_id);
      const { $user_agent, ...properties } = item.properties as Record<string, unknown>;
      // Roughly what enrichment leaves in place of the user agent.
      if ($user_agent !== undefined) Object.assign(properties, { $browser: 'Chrome', $browser_version: '124.0.0.0', $os: 'Windows', $os_version: '10', $device_type: 'desktop' });
      properties.$source_id = BASELINE_SOURCE;
      rows.push({
        event: item.type === 'identify' ? '$identify' : item.event,
        distinctId: item.distinct_id,
        personId: `per_${item.distinct_id.padEnd(22, '0')}`,
        timestamp: typeof item.timestamp === 'number' ? item.timestamp : Date.parse(item.timestamp),
        insertId: item.insert_id,
        properties: JSON.stringify(properties),
      });
    }
  }
  return { rows, pool };
}

/** Hands out rows in order; past the end, again with a fresh round character in every insert_id. */
export class RowCursor {
  private n = 0;

  constructor(
    private readonly rows: BaselineRow[],
    private readonly roundIndex: number,
  ) {}

  next(): BaselineRow {
    const round = Math.floor(this.n / this.rows.length) % ROUNDS.length;
    const row = this.rows[this.n++ % this.rows.length]!;
    if (round === 0) return row;
    const id = row.insertId;
    return { ...row, insertId: id.slice(0, this.roundIndex) + ROUNDS[round] + id.slice(this.roundIndex + 1) };
  }
}

/** What a storage baseline prints when done. */
export interface StorageFigures {
  engine: string;
  rows: number;
  seconds: number;
  rowsPerSec: number;
  transactions: number;
  rowsPerTransaction: number;
  /** CPU of the writing process (for SQLite, the whole storage engine). */
  cpuSec: number;
  /** CPU of PostgreSQL's processes meanwhile; null for SQLite or when they are not visible. */
  dbCpuSec: number | null;
  peakRssMiB: number;
  writers: number;
  /** The settings that make a commit durable, as the database reported them. */
  durability: Record<string, string>;
}

/** Prints a baseline's figures as the one JSON line run.ts reads; `start` and `cpu0` are from when writing began. */
export function printStorageFigures(
  engine: string,
  run: { written: number; transactions: number; perTx: number; writers: number; start: number; cpu0: NodeJS.CpuUsage; dbCpuSec: number | null; durability: Record<string, string> },
): void {
  const seconds = (performance.now() - run.start) / 1000;
  const cpu = process.cpuUsage(run.cpu0);
  const figures: StorageFigures = {
    engine,
    rows: run.written,
    seconds,
    rowsPerSec: run.written / seconds,
    transactions: run.transactions,
    rowsPerTransaction: run.perTx,
    cpuSec: (cpu.user + cpu.system) / 1e6,
    dbCpuSec: run.dbCpuSec,
    peakRssMiB: process.resourceUsage().maxRSS / 1024,
    writers: run.writers,
    durability: run.durability,
  };
  process.stdout.write(`${JSON.stringify(figures)}\n`);
}

/** Reads `--name value` pairs. */
export function args(argv: string[]): Map<string, string> {
  const m = new Map<string, string>();
  for (let i = 0; i + 1 < argv.length; i += 2) m.set(argv[i]!.replace(/^--/, ''), argv[i + 1]!);
  return m;
}
