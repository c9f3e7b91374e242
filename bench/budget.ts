/**
 * Keeping a tenant inside its rate limits from the client side. The server
 * counts items per project in sliding windows (and requests per key per
 * second); the multi-tenant workload is meant to stay within them, so the
 * load generator holds a request back rather than let the server refuse it.
 */

/** One sliding window the server counts in: `limit` items (or requests) per `windowMs`. */
export interface LimitWindow {
  name: string;
  limit: number;
  windowMs: number;
  unit: 'items' | 'requests';
}

/**
 * The project windows a 2xx answer names in its RateLimit-Policy header, e.g.
 * `"burst";q=50000;w=10, "sustained";q=60000;w=60`. Empty when the header is
 * absent or names no window (a server with its limits off).
 */
export function parseRateLimitPolicy(header: string | undefined | null): LimitWindow[] {
  if (header === undefined || header === null) return [];
  const out: LimitWindow[] = [];
  for (const part of header.split(',')) {
    const name = /"([^"]+)"/.exec(part)?.[1];
    const q = /;\s*q=(\d+)/.exec(part)?.[1];
    const w = /;\s*w=(\d+)/.exec(part)?.[1];
    if (name === undefined || q === undefined || w === undefined) continue;
    out.push({ name, limit: Number(q), windowMs: Number(w) * 1000, unit: 'items' });
  }
  return out;
}

/**
 * What each tenant has sent within its windows, and whether the next request
 * fits under `share` of every limit. Times are passed in (milliseconds), so
 * the logic is the same under test and in a run.
 */
export class WindowBudget {
  private readonly sent: { at: number; items: number }[][];
  private readonly longestMs: number;

  constructor(
    tenants: number,
    private readonly windows: readonly LimitWindow[],
    private readonly share = 0.9,
  ) {
    this.sent = Array.from({ length: tenants }, () => []);
    this.longestMs = Math.max(0, ...windows.map((w) => w.windowMs));
  }

  /** True when a request of `items` for `tenant` at `now` stays within `share` of every window. */
  fits(tenant: number, items: number, now: number): boolean {
    return this.roomAt(tenant, items, now) <= now;
  }

  /** Records a request sent. */
  take(tenant: number, items: number, now: number): void {
    const log = this.sent[tenant]!;
    log.push({ at: now, items });
    // Entries older than the longest window no longer count anywhere.
    while (log.length > 0 && log[0]!.at <= now - this.longestMs) log.shift();
  }

  /** The earliest time, not before `now`, at which a request of `items` would fit. */
  roomAt(tenant: number, items: number, now: number): number {
    const log = this.sent[tenant]!;
    let at = now;
    for (const w of this.windows) {
      const cap = Math.floor(w.limit * this.share);
      const cost = w.unit === 'items' ? items : 1;
      if (cost > cap) return Number.POSITIVE_INFINITY;
      // Walk the entries still inside the window oldest first; until enough have left it, the request waits.
      const inside = log.filter((e) => e.at > now - w.windowMs);
      let used = inside.reduce((n, e) => n + (w.unit === 'items' ? e.items : 1), 0);
      for (const e of inside) {
        if (used + cost <= cap) break;
        used -= w.unit === 'items' ? e.items : 1;
        at = Math.max(at, e.at + w.windowMs);
      }
    }
    return at;
  }
}
