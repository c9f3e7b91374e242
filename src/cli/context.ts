import type { Command } from 'commander';
import { ConfigError, loadConfig } from '../config.js';
import { AdminError, createAdmin } from '../domain/admin.js';
import { errorForLog } from '../edge/log-error.js';
import { parseIso } from '../domain/items/fields/timestamp.js';
import { NoStoreError, openStore, requireStore } from '../stores/open-store.js';
import { type Store, StoreUnavailableError } from '../stores/port.js';
import { formatCount } from './numbers.js';
import { MIN_CUT_COLUMN, cutTo } from './output-width.js';
import { cliIo, setExitCode } from './io.js';

/** Options every admin subcommand takes. */
export interface CommonOptions {
  dataDir?: string;
  json?: boolean;
}

/** Adds --data-dir and --json to a subcommand. */
export function withCommon(cmd: Command): Command {
  return cmd
    .option('--data-dir <dir>', 'data directory of the embedded store (env INLET_DATA_DIR, default ./data)')
    .option('--json', 'print exactly one JSON value on stdout');
}

/**
 * Runs a subcommand against the store the server would use, prints its result
 * (JSON with --json, else the human line), and turns refusals into a sentence
 * on stderr and exit status 1.
 */
export async function runWithStore<T>(
  opts: CommonOptions,
  work: (ctx: { store: Store; admin: ReturnType<typeof createAdmin> }) => Promise<T>,
  human: (result: T) => string,
): Promise<void> {
  try {
    const result = await openForCommand(opts, work);
    cliIo().stdout.write(opts.json ? `${JSON.stringify(result)}\n` : `${human(result)}\n`);
  } catch (e) {
    fail(e);
  }
}

/** Opens the store the server would use (never a new one), runs `work` on it and closes it, whatever happens. */
export async function openForCommand<T>(
  opts: CommonOptions,
  work: (ctx: { store: Store; admin: ReturnType<typeof createAdmin> }) => Promise<T>,
): Promise<T> {
  const cfg = loadConfig(cliIo().env, { dataDir: opts.dataDir });
  await requireStore(cfg);
  const store = await openStore(cfg);
  try {
    return await work({ store, admin: createAdmin(store, Date.now) });
  } finally {
    await store.close();
  }
}

/** Prints what went wrong as a sentence on stderr and sets a failing exit status, which it returns. */
export function fail(e: unknown): number {
  // A store that cannot be reached is the operator's to fix, not a bug: its message says what to check.
  const known = e instanceof AdminError || e instanceof ConfigError || e instanceof UsageError || e instanceof StoreUnavailableError || e instanceof NoStoreError;
  cliIo().stderr.write(`inlet: ${known ? (e as Error).message : `unexpected failure: ${unexpected(e)}`}\n`);
  const code = known ? 1 : 2;
  setExitCode(code);
  return code;
}

/** What stderr (a server's log) may say of an unexpected error: as much as a log line may hold, never data it quotes. */
function unexpected(e: unknown): string {
  const safe = errorForLog(e);
  if (safe.message !== undefined) return safe.message;
  return `${safe.type}${typeof safe.code === 'string' ? ` ${safe.code}` : ''} (its message is left out, as it may quote data)`;
}

/** The reader of a pipe went away (`inlet events export | head`): a normal end of output, not a failure. */
export function isClosedPipe(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as NodeJS.ErrnoException).code === 'EPIPE';
}

/** A flag value the command cannot use. */
export class UsageError extends Error {}

export function parseBool(v: string, flag: string): boolean {
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new UsageError(`${flag} takes true or false, not "${v}".`);
}

/**
 * A whole number from `min` to `max`, given in digits. Every numeric option
 * goes through here with a range of its own, so a value is never rounded on
 * the way in (99999999999999999999 is not 100000000000000000000).
 */
export function parseWhole(v: string, flag: string, range: { min: number; max: number }, orElse?: string): number {
  const n = /^\d{1,16}$/.test(v) ? Number(v) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < range.min || n > range.max) {
    throw new UsageError(`${flag} takes a whole number from ${formatCount(range.min)} to ${formatCount(range.max)}${orElse === undefined ? '' : ` or ${orElse}`}, not "${v}".`);
  }
  return n;
}

/** A time given as ISO 8601 (a date alone is midnight UTC) or epoch milliseconds. */
export function parseTime(v: string, flag: string): number {
  if (/^\d+$/.test(v)) return Number(v);
  const ms = /^\d{4}-\d{2}-\d{2}$/.test(v) ? parseIso(`${v}T00:00:00Z`) : parseIso(v);
  if (ms === null) throw new UsageError(`${flag} takes ISO 8601 (such as 2026-01-31 or 2026-01-31T12:00:00Z) or epoch milliseconds, not "${v}".`);
  return ms;
}

/**
 * A fixed-width table for human output. With `width`, the last column (free text such as
 * properties) is cut so that a line fits in it, keeping at least MIN_CUT_COLUMN characters.
 */
export function table(rows: string[][], width?: number): string {
  if (rows.length === 0) return '(none)';
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  if (width !== undefined) {
    const last = widths.length - 1;
    const before = widths.slice(0, last).reduce((sum, w) => sum + w + 2, 0);
    const room = Math.max(MIN_CUT_COLUMN, width - before);
    rows = rows.map((r) => r.map((c, i) => (i === last ? cutTo(c, room) : c)));
    widths[last] = Math.min(widths[last]!, room);
  }
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}
