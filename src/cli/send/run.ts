import { createReadStream, statSync } from 'node:fs';
import { type Clock, Inlet, type Report } from '@inlet/node';
import { UsageError } from '../context.js';
import { isExportKey } from '../refused-export.js';
import { Acknowledged } from './acknowledged.js';
import { linesOf } from './lines.js';
import { Problems, type Stderr, Trouble } from './problems.js';
import { type SendPosition, startProgress } from './progress.js';
import { PrefixHash, StateFile, defaultStatePath, newRunId, readState, verifyPrefix } from './state.js';
import { cliIo } from '../io.js';

/** Items held at once: reading pauses past this (the client's maxQueue), so memory stays flat for any file size. */
const MAX_HELD = 5000;
/** Answers about the request itself (key, path, API access): every later batch would get the same. */
const HOPELESS = new Set([401, 403, 404, 405, 410, 415]);
/** How long the server may be out of reach before the send stops, unless --unreachable-timeout says otherwise. */
export const DEFAULT_UNREACHABLE_SECONDS = 60;
/** How often the state file and the progress bar catch up with the outcomes. */
const TICK_MS = 1000;

/** What `inlet send --json` prints. */
export interface SendSummary {
  /** Items sent: lines that held one. */
  sent: number;
  accepted: number;
  duplicates: number;
  dropped: number;
  refused: number;
  failed: number;
  /** Lines that hold no item (not JSON, or JSON that is not an object): not sent, so in no outcome. */
  unreadable: number;
}

/** What a send is told on its command line. */
export interface SendOptions {
  key?: string;
  baseUrl?: string;
  import?: boolean;
  /** Continue from the state a stopped send of the same file left. */
  resume?: boolean;
  /** Where that state is kept; `<file>.inlet-send.json` by default. */
  state?: string;
  /** Seconds the server may be out of reach before the send stops. */
  unreachableSeconds?: number;
}

/** Where a send writes its messages, and the clock its client runs on (tests pass their own). */
export interface SendDeps {
  stderr: Stderr;
  clock?: Clock;
}

/** Where a send begins: after `line`, at byte `offset`, under run id `run`. */
interface Start {
  line: number;
  offset: number;
  run: string;
  hash: PrefixHash | null;
}

/** Sends the NDJSON items of `file` ("-": stdin) and says what became of them. */
export async function sendFile(file: string, o: SendOptions, deps: SendDeps): Promise<SendSummary> {
  const stderr = deps.stderr;
  const { key, baseUrl, path, url } = target(o);
  const stdin = file === '-';
  if (stdin && (o.resume || o.state !== undefined)) throw new UsageError('--resume and --state need a file: stdin cannot be read again. Save the input to a file and send that.');
  if (!stdin) mustExist(file);
  const statePath = stdin ? null : (o.state ?? defaultStatePath(file));
  const start = statePath === null ? { line: 0, offset: 0, run: newRunId(), hash: null } : await startOf(file, statePath, path, o.resume === true, stderr);
  const state = statePath === null ? null : new StateFile(statePath, file, path, start.run, start.hash ?? new PrefixHash(file));
  const unreachableSeconds = o.unreachableSeconds ?? DEFAULT_UNREACHABLE_SECONDS;

  const problems = new Problems(url, stderr);
  const trouble = new Trouble(url, stderr, unreachableSeconds);
  const acked = new Acknowledged(start.line, start.offset);
  const lines = new LinesInFlight();
  const total = emptySummary();
  let settledLines = 0;
  /** Why the send stopped reading, once an item failed: what is left is for --resume. */
  let stopped: string | null = null;
  const inlet = new Inlet({
    key,
    baseUrl,
    path,
    clock: deps.clock,
    flushAt: 500,
    maxQueue: MAX_HELD,
    // A live server is waited for as long as it takes; only one out of reach is given up on.
    maxRetries: Infinity,
    closeTimeoutMs: Infinity,
    unreachableTimeoutMs: unreachableSeconds * 1000,
    onRetry: (info) => trouble.retrying(info),
    onResult: (r) => {
      const line = lines.take(r.insertId);
      if (r.outcome !== 'accepted' && r.outcome !== 'duplicate') problems.item(line, r);
      if (r.outcome === 'failed') {
        stopped ??= HOPELESS.has(r.status ?? 0) ? `the server refused the requests (${[r.status, r.code].filter((x) => x !== undefined).join(' ')})` : problems.why(r);
        return;
      }
      trouble.reached();
      settledLines++;
      if (line !== undefined) acked.settle(line);
    },
  });

  const input = stdin ? cliIo().stdin : createReadStream(file, { start: start.offset });
  const progress = startProgress(stdin ? null : statSync(file).size, start.offset, stderr);
  let read = start.offset;
  let lineNo = start.line;
  const position = (): SendPosition => ({ acknowledged: acked.offset, read, linesRead: lineNo - start.line, settled: settledLines, limits: inlet.rateLimits });
  const tick = setInterval(() => {
    progress.update(position());
    void state?.save(acked.line, acked.offset).catch(() => {});
  }, TICK_MS);
  tick.unref();
  try {
    for await (const line of linesOf(input, start.offset)) {
      if (stopped !== null) break;
      lineNo++;
      read = line.end;
      acked.read(lineNo, line.end);
      if (line.text.trim() === '') {
        settle(lineNo);
        continue;
      }
      // Editors on Windows save UTF-8 with a byte order mark; it is not part of the first item.
      const item = parseLine(lineNo === 1 ? line.text.replace(/^\uFEFF/, '') : line.text);
      if (typeof item === 'string') {
        total.unreadable++;
        problems.line(lineNo, item);
        settle(lineNo);
        continue;
      }
      // What `inlet refused export` adds to an item is for the reader, not the server.
      for (const k of Object.keys(item)) if (isExportKey(k)) delete item[k];
      lines.add(withInsertId(item, start.run, lineNo), lineNo);
      total.sent++;
      if (!inlet.enqueue(item)) await inlet.drain();
    }
    add(total, await inlet.close());
  } finally {
    clearInterval(tick);
  }
  progress.stop(position());
  problems.finish();
  await finish(stopped, lineNo, acked, state, file, stderr);
  return total;

  function settle(line: number): void {
    settledLines++;
    acked.settle(line);
  }
}

/** The key, and where the items go; throws what to change when either is missing or wrong. */
function target(o: SendOptions): { key: string; baseUrl: string; path: string; url: string } {
  const key = o.key ?? cliIo().env.INLET_KEY;
  if (key === undefined || key === '') throw new UsageError('Give the server key with --key or INLET_KEY.');
  const baseUrl = o.baseUrl ?? cliIo().env.INLET_BASE_URL ?? 'http://localhost:8080';
  if (!/^https?:\/\//.test(baseUrl)) throw new UsageError(`--base-url must be an http:// or https:// URL, not "${baseUrl}".`);
  const path = o.import ? '/api/v1/import' : '/api/v1/batch';
  return { key, baseUrl, path, url: new URL(path, baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`).toString() };
}

/** Where this send begins: the start of the file, or where the state of a stopped send says. */
async function startOf(file: string, statePath: string, path: string, resume: boolean, stderr: Stderr): Promise<Start> {
  const state = readState(statePath);
  if (!resume) {
    if (state !== null) stderr.write(`inlet: ${statePath} holds an earlier send of this file that stopped after line ${state.line}; this one starts over (give --resume to go on from there)\n`);
    return { line: 0, offset: 0, run: newRunId(), hash: null };
  }
  if (state === null) throw new UsageError(`No send to resume: ${statePath} does not exist (a send writes it when it stops early, and removes it once done). Send the file without --resume.`);
  if (state.path !== path) throw new UsageError(`${statePath} is of a send to ${state.path}: resume it ${state.path === '/api/v1/import' ? 'with' : 'without'} --import.`);
  const hash = await verifyPrefix(file, statePath, state);
  stderr.write(`inlet: resuming ${file} after line ${state.line}, as ${statePath} says\n`);
  return { line: state.line, offset: state.offset, run: state.run, hash };
}

/** Says how the send ended and keeps (or removes) its state accordingly. */
async function finish(stopped: string | null, lineNo: number, acked: Acknowledged, state: StateFile | null, file: string, stderr: Stderr): Promise<void> {
  if (stopped === null) {
    await state?.remove();
    return;
  }
  const done = acked.line === 0 ? 'no line has its outcome yet' : `lines 1 to ${acked.line} have their outcome`;
  if (state === null) {
    stderr.write(`inlet: stopped after line ${lineNo}: ${stopped}; ${done}. stdin cannot be resumed: send the lines after line ${acked.line} again once that is fixed.\n`);
    return;
  }
  try {
    await state.save(acked.line, acked.offset);
  } catch (e) {
    stderr.write(`inlet: stopped after line ${lineNo}: ${stopped}; ${done}, but the state could not be written to ${state.statePath} (${(e as Error).message}): give --state FILE somewhere writable.\n`);
    return;
  }
  stderr.write(
    `inlet: stopped after line ${lineNo}: ${stopped}; ${done}. Once that is fixed, send the rest with: inlet send ${file} --resume (the state is in ${state.statePath})\n`,
  );
}

/** Lines of the items in flight by insert_id: a file may repeat one, so each id keeps its lines in order. */
class LinesInFlight {
  private readonly byId = new Map<string, number | number[]>();

  add(insertId: string, line: number): void {
    const seen = this.byId.get(insertId);
    if (seen === undefined) this.byId.set(insertId, line);
    else if (typeof seen === 'number') this.byId.set(insertId, [seen, line]);
    else seen.push(line);
  }

  take(insertId: string): number | undefined {
    const seen = this.byId.get(insertId);
    if (typeof seen !== 'object') {
      this.byId.delete(insertId);
      return seen;
    }
    const line = seen.shift();
    if (seen.length === 0) this.byId.delete(insertId);
    return line;
  }
}

function mustExist(file: string): void {
  try {
    statSync(file);
  } catch {
    throw new UsageError(`Cannot read ${file}: no such file. Give an NDJSON file, or - to read stdin.`);
  }
}

/** The item of a line, or why the line holds none. */
function parseLine(line: string): Record<string, unknown> | string {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch (e) {
    return `unreadable: not JSON (${(e as Error).message}); each line must be one JSON object`;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'unreadable: not a JSON object; each line must be one item such as {"event": "signed_up", "distinct_id": "u_1"}';
  return v as Record<string, unknown>;
}

/**
 * The item's insert_id. One sent without gets `<run>-<line>`: a retry, and a
 * resumed run (which keeps the run id), send it again under the same one, so
 * it is stored once.
 */
function withInsertId(item: Record<string, unknown>, run: string, line: number): string {
  const props = item.properties;
  const given = item.insert_id ?? (typeof props === 'object' && props !== null ? (props as Record<string, unknown>).$insert_id : undefined);
  if (given !== undefined && given !== null) return String(given);
  const id = `${run}-${line}`;
  item.insert_id = id;
  return id;
}

function emptySummary(): SendSummary {
  return { sent: 0, accepted: 0, duplicates: 0, dropped: 0, refused: 0, failed: 0, unreadable: 0 };
}

function add(total: SendSummary, r: Report): void {
  total.accepted += r.accepted;
  total.duplicates += r.duplicates;
  total.dropped += r.dropped;
  total.refused += r.refused;
  total.failed += r.failed;
}
