import { randomUUID } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { type Clock, Inlet, type ItemResult, type Report, type RetryInfo } from '@inlet/node';
import { UsageError } from '../context.js';
import { type SendProgress, startProgress } from './progress.js';
import { formatCount } from '../numbers.js';

/** Items held at once: reading pauses past this (the client's maxQueue), so memory stays flat for any file size. */
const MAX_HELD = 5000;
/** Item problems printed one per line; past this only their count. */
const MAX_PRINTED = 100;
/** Answers about the request itself (key, path, API access): every later batch would get the same. */
const HOPELESS = new Set([401, 403, 404, 405, 410, 415]);
/** How long close() may go on retrying what is left once the file is read. */
const CLOSE_TIMEOUT_MS = 60_000;

/** What `inlet send --json` prints. */
export interface SendSummary {
  sent: number;
  accepted: number;
  duplicates: number;
  dropped: number;
  refused: number;
  failed: number;
}

/** What a send is told on its command line. */
export interface SendOptions {
  key?: string;
  baseUrl?: string;
  import?: boolean;
}

/** Where a send writes its messages, and the clock its client runs on (tests pass their own). */
export interface SendDeps {
  stderr: { write(text: string): unknown; isTTY?: boolean };
  clock?: Clock;
}

/** Sends the NDJSON items of `file` ("-": stdin) and says what became of them. */
export async function sendFile(file: string, o: SendOptions, deps: SendDeps): Promise<SendSummary> {
  const stderr = deps.stderr;
  const key = o.key ?? process.env.INLET_KEY;
  if (key === undefined || key === '') throw new UsageError('Give the server key with --key or INLET_KEY.');
  const baseUrl = o.baseUrl ?? process.env.INLET_BASE_URL ?? 'http://localhost:8080';
  if (!/^https?:\/\//.test(baseUrl)) throw new UsageError(`--base-url must be an http:// or https:// URL, not "${baseUrl}".`);
  const input = file === '-' ? process.stdin : openFile(file);
  const path = o.import ? '/api/v1/import' : '/api/v1/batch';
  const url = new URL(path, baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`).toString();
  const problems = new Problems(url, stderr);
  const trouble = new Trouble(url, stderr);
  // Lines of the items not settled yet, to name the line of an item refused later.
  const lineOf = new Map<string, number>();
  const inlet = new Inlet({
    key,
    baseUrl,
    path,
    clock: deps.clock,
    flushAt: 500,
    maxQueue: MAX_HELD,
    onRetry: (info) => trouble.retrying(info),
    onResult: (r) => {
      if (r.outcome !== 'failed') trouble.reached();
      const line = lineOf.get(r.insertId);
      lineOf.delete(r.insertId);
      if (r.outcome !== 'accepted' && r.outcome !== 'duplicate') problems.item(line, r);
      if (r.outcome === 'failed' && r.status !== undefined && HOPELESS.has(r.status)) stopped ??= `${r.status} ${r.code ?? ''}`.trim();
    },
  });
  let stopped: string | null = null;
  const total = emptySummary();
  const progress: SendProgress = startProgress(file === '-' ? null : statSync(file).size, stderr);
  let bytes = 0;
  input.on('data', (chunk: Buffer | string) => (bytes += chunk.length));
  let lineNo = 0;
  for await (const line of createInterface({ input, crlfDelay: Infinity })) {
    lineNo++;
    if (stopped !== null) break;
    if (line.trim() === '') continue;
    total.sent++;
    // Editors on Windows save UTF-8 with a byte order mark; it is not part of the first item.
    const item = parseLine(lineNo === 1 ? line.replace(/^\uFEFF/, '') : line);
    if (typeof item === 'string') {
      total.refused++;
      problems.line(lineNo, item);
    } else {
      const insertId = withInsertId(item);
      lineOf.set(insertId, lineNo);
      if (!inlet.enqueue(item)) await inlet.drain();
    }
    progress.update(bytes, total.sent);
  }
  add(total, await inlet.close({ timeoutMs: CLOSE_TIMEOUT_MS }));
  progress.stop(bytes, total.sent);
  problems.finish();
  if (stopped !== null) stderr.write(`inlet: stopped after line ${lineNo}: the server refused the requests (${stopped}); fix that and send the file again (items already stored come back as duplicates).\n`);
  return total;
}

function openFile(file: string) {
  try {
    statSync(file);
  } catch {
    throw new UsageError(`Cannot read ${file}: no such file. Give an NDJSON file, or - to read stdin.`);
  }
  return createReadStream(file);
}

/** The item of a line, or why the line is not one. */
function parseLine(line: string): Record<string, unknown> | string {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch (e) {
    return `not JSON (${(e as Error).message}); each line must be one JSON object`;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return `not a JSON object; each line must be one item such as {"event": "signed_up", "distinct_id": "u_1"}`;
  return v as Record<string, unknown>;
}

/** The item's insert_id, given one when it has none, so its outcome can name its line. */
function withInsertId(item: Record<string, unknown>): string {
  const props = item.properties;
  const given = item.insert_id ?? (typeof props === 'object' && props !== null ? (props as Record<string, unknown>).$insert_id : undefined);
  if (given !== undefined && given !== null) return String(given);
  const id = randomUUID();
  item.insert_id = id;
  return id;
}

/** Item problems on stderr, one a line, at most MAX_PRINTED of them; failures summarised by reason at the end. */
class Problems {
  private count = 0;
  /** Failures are per request, not per item: counted by reason, with the first line that failed so. */
  private readonly failures = new Map<string, { items: number; first: string }>();

  constructor(
    private readonly url: string,
    private readonly stderr: SendDeps['stderr'],
  ) {}

  line(lineNo: number, why: string): void {
    this.print(`line ${lineNo}: ${why}`);
  }

  item(lineNo: number | undefined, r: ItemResult): void {
    const where = lineNo === undefined ? `insert_id ${r.insertId}` : `line ${lineNo}`;
    if (r.outcome === 'refused') this.print(`${where}: refused: ${r.errors.map((e) => `${e.code} (${e.field}): ${e.message}`).join('; ')}`);
    else if (r.outcome === 'dropped') this.print(`${where}: dropped: ${r.reason}`);
    else if (r.outcome === 'failed') {
      const why = r.status === undefined ? `could not reach ${this.url} (${r.error ?? 'no answer'})` : `${this.url} answered ${[r.status, r.code, r.error].filter((x) => x !== undefined).join(' ')}`;
      const seen = this.failures.get(why);
      if (seen === undefined) this.failures.set(why, { items: 1, first: where });
      else seen.items++;
    }
  }

  finish(): void {
    if (this.count > MAX_PRINTED) this.stderr.write(`inlet: ${formatCount(this.count - MAX_PRINTED)} more items not listed\n`);
    for (const [why, f] of this.failures) {
      this.stderr.write(`inlet: ${f.items === 1 ? `1 item (${f.first})` : `${formatCount(f.items)} items (the first at ${f.first})`} failed: ${why}\n`);
    }
  }

  private print(text: string): void {
    if (++this.count <= MAX_PRINTED) this.stderr.write(`inlet: ${text}\n`);
  }
}

/**
 * Says at once, on stderr, when the server cannot be reached or answers with
 * an error the client retries, rather than staying silent until the retries
 * run out; once per spell of trouble.
 */
class Trouble {
  private said: string | null = null;

  constructor(
    private readonly url: string,
    private readonly stderr: SendDeps['stderr'],
  ) {}

  retrying(info: RetryInfo): void {
    const what = info.status === undefined ? `cannot reach ${this.url} (${info.error ?? 'no answer'})` : `${this.url} answered ${[info.status, info.code].filter((x) => x !== undefined).join(' ')}`;
    if (this.said === what) return;
    this.said = what;
    const hint = info.status === undefined ? ' Is the server running there? Give its address with --base-url or INLET_BASE_URL.' : '';
    this.stderr.write(`inlet: ${what}; still retrying (for up to ${CLOSE_TIMEOUT_MS / 1000} s once the file is read).${hint}\n`);
  }

  reached(): void {
    if (this.said === null) return;
    this.said = null;
    this.stderr.write(`inlet: ${this.url} answers again\n`);
  }
}

function emptySummary(): SendSummary {
  return { sent: 0, accepted: 0, duplicates: 0, dropped: 0, refused: 0, failed: 0 };
}

function add(total: SendSummary, r: Report): void {
  total.accepted += r.accepted;
  total.duplicates += r.duplicates;
  total.dropped += r.dropped;
  total.refused += r.refused;
  total.failed += r.failed;
}

