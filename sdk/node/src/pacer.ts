/**
 * Keeps a client within the server's rate limits, so that sending as fast as
 * it can costs waits here rather than 429s and their Retry-After.
 *
 * Two kinds of limit: the project's item windows, which every answer that
 * passed them states in `RateLimit-Policy` / `RateLimit` (items left, seconds
 * until the oldest count leaves), and the key's requests per second, which
 * the server names only on the 429 that enforces it. Until an answer names
 * the key's limit, the server's default is assumed.
 */

/** The server's default requests per second for one key. */
export const DEFAULT_KEY_RPS = 100;
/** Share of the key's limit used: the server counts arrivals, and they bunch up on the way. */
const KEY_SHARE = 0.8;
/** The key's limit is a one-second window. */
const KEY_WINDOW_MS = 1000;

interface Window {
  /** Items this client may still send before `resetAt`, by the last answer less what was sent since. */
  remaining: number;
  resetAt: number;
}

export class Pacer {
  private keyRequests = DEFAULT_KEY_RPS;
  private keyWindowMs = KEY_WINDOW_MS;
  /** When each request of the last key window starts (or is due to), in order. */
  private readonly starts: number[] = [];
  private readonly windows = new Map<string, Window>();
  /** Items of requests sent and not yet answered: an answer's counts do not hold them yet. */
  private inFlight = 0;

  /** Books a request of `items` and says how long to wait before sending it. */
  reserve(items: number, now: number): number {
    let at = now;
    for (const [name, w] of this.windows) {
      if (w.resetAt <= now) this.windows.delete(name);
      else if (w.remaining < items) at = Math.max(at, w.resetAt);
    }
    const perWindow = Math.max(1, Math.floor(this.keyRequests * KEY_SHARE));
    while (this.starts.length > 0 && this.starts[0]! <= at - this.keyWindowMs) this.starts.shift();
    if (this.starts.length >= perWindow) {
      at = Math.max(at, this.starts[this.starts.length - perWindow]! + this.keyWindowMs);
    }
    this.starts.push(at);
    this.starts.sort((a, b) => a - b);
    for (const w of this.windows.values()) if (at < w.resetAt) w.remaining -= items;
    this.inFlight += items;
    return at - now;
  }

  /** A request of `items` was answered (or failed); its headers, when it had an answer. */
  answered(items: number, headers: { policy: string | null; state: string | null } | null, now: number): void {
    this.inFlight = Math.max(0, this.inFlight - items);
    if (headers === null) return;
    const policies = parseFields(headers.policy);
    const key = policies.get('per_key');
    if (key !== undefined && key.q !== undefined && key.q > 0 && key.w !== undefined && key.w > 0) {
      this.keyRequests = key.q;
      this.keyWindowMs = key.w * 1000;
    }
    for (const [name, s] of parseFields(headers.state)) {
      if (name === 'per_key' || s.r === undefined || s.t === undefined) continue;
      this.windows.set(name, { remaining: s.r - this.inFlight, resetAt: now + s.t * 1000 });
    }
  }
}

/** `"name";a=1;b=2, "other";a=3` as a map of names to their numeric parameters. */
export function parseFields(header: string | null): Map<string, Record<string, number>> {
  const out = new Map<string, Record<string, number>>();
  if (header === null) return out;
  for (const member of header.split(',')) {
    const [rawName, ...params] = member.split(';');
    const name = rawName?.trim().replace(/^"(.*)"$/, '$1');
    if (!name) continue;
    const values: Record<string, number> = {};
    for (const p of params) {
      const [k, v] = p.split('=');
      const n = Number(v?.trim());
      if (k !== undefined && Number.isFinite(n)) values[k.trim()] = n;
    }
    out.set(name, values);
  }
  return out;
}
