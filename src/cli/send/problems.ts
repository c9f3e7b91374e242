import type { ItemResult, RetryInfo } from '@inlet/node';
import { formatCount } from '../numbers.js';

/** Where a send writes its messages. */
export interface Stderr {
  write(text: string): unknown;
  isTTY?: boolean;
}

/** Item problems printed one per line; past this only their count. */
const MAX_PRINTED = 100;

/** Item problems on stderr, one a line, at most MAX_PRINTED of them; failures summarised by reason at the end. */
export class Problems {
  private count = 0;
  /** Failures are per request, not per item: counted by reason, with the first line that failed so. */
  private readonly failures = new Map<string, { items: number; first: string }>();

  constructor(
    private readonly url: string,
    private readonly stderr: Stderr,
  ) {}

  /** A line that holds no item. */
  line(lineNo: number, why: string): void {
    this.print(`line ${lineNo}: ${why}`);
  }

  item(lineNo: number | undefined, r: ItemResult): void {
    const where = lineNo === undefined ? `insert_id ${r.insertId}` : `line ${lineNo}`;
    if (r.outcome === 'refused') this.print(`${where}: refused: ${r.errors.map((e) => `${e.code} (${e.field}): ${e.message}`).join('; ')}`);
    else if (r.outcome === 'dropped') this.print(`${where}: dropped: ${r.reason}`);
    else if (r.outcome === 'failed') {
      const seen = this.failures.get(this.why(r));
      if (seen === undefined) this.failures.set(this.why(r), { items: 1, first: where });
      else seen.items++;
    }
  }

  /** Why an item failed, naming the URL: the network error, or the answer. */
  why(r: Extract<ItemResult, { outcome: 'failed' }>): string {
    if (r.status === undefined) return `could not reach ${this.url} (${r.error ?? 'no answer'})`;
    const answer = [r.status, r.code].filter((x) => x !== undefined).join(' ');
    return `${this.url} answered ${answer}${r.error === undefined ? '' : ` (${r.error})`}`;
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
 * an error the client retries, rather than staying silent until it gives up;
 * once per spell of trouble.
 */
export class Trouble {
  private said: string | null = null;

  constructor(
    private readonly url: string,
    private readonly stderr: Stderr,
    private readonly giveUpSeconds: number,
  ) {}

  retrying(info: RetryInfo): void {
    const what = info.status === undefined ? `cannot reach ${this.url} (${info.error ?? 'no answer'})` : `${this.url} answered ${[info.status, info.code].filter((x) => x !== undefined).join(' ')}`;
    if (this.said === what) return;
    this.said = what;
    // A server that answers (a 429 from another sender's traffic, say) is waited for as long as it takes.
    const outOfReach = info.status === undefined || info.status >= 500;
    const until = outOfReach ? `; still retrying, for up to ${this.giveUpSeconds} s out of reach.` : '; still retrying.';
    const hint = info.status === undefined ? ' Is the server running there? Give its address with --base-url or INLET_BASE_URL.' : '';
    this.stderr.write(`inlet: ${what}${until}${hint}\n`);
  }

  reached(): void {
    if (this.said === null) return;
    this.said = null;
    this.stderr.write(`inlet: ${this.url} answers again\n`);
  }
}
