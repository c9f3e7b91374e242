/**
 * Keeps a client within the server's rate limits, so that sending as fast as
 * it can costs waits here rather than 429s and their Retry-After.
 *
 * Two kinds of limit: the project's item windows, which every answer that
 * passed them states in `RateLimit-Policy` / `RateLimit`, and the key's
 * requests per second, which the server names only on the 429 that enforces
 * it. Until an answer names the key's limit, the server's default is assumed.
 *
 * The project windows slide: each count leaves its window exactly `w` seconds
 * after it entered. An answer says `r`, the items the window still takes, and
 * `t`, the seconds until its oldest count leaves; it does not say how large
 * that count is, so `t` cannot tell when a batch larger than `r` fits (the
 * oldest count may be two items). What is certain: every count the answer
 * holds has left `w` seconds after it, and then only what was sent since is
 * in the window. So a batch waits for room that is known, never for a guess.
 */

/** The server's default requests per second for one key. */
export const DEFAULT_KEY_RPS = 100;
/** Share of the key's limit used: the server counts arrivals, and they bunch up on the way. */
const KEY_SHARE = 0.8;
/** The key's limit is a one-second window. */
const KEY_WINDOW_MS = 1000;

/** One project window as the last answer that named it left it. */
interface Window {
  /** The window's quota (`q`), or null when the answer gave no policy for it. */
  quota: number | null;
  /** Items the window still takes now, by that answer, less everything sent since or in flight then. */
  remaining: number;
  /** When every count that answer held has left the window: the answer's time plus `w`. */
  clearAt: number;
  /** The window's length (`w`) in ms. */
  windowMs: number;
  /** Items sent since that answer, or in flight at it: they may still be in the window at `clearAt`. */
  since: number;
  /**
   * The last answer without headers since (a network error): what it carried
   * was counted by then if at all, so a window later only what is in flight
   * may still be in the window.
   */
  lastBlindAt: number;
}

export class Pacer {
  private keyRequests = DEFAULT_KEY_RPS;
  private keyWindowMs = KEY_WINDOW_MS;
  /** When each request of the last key window started, in order. */
  private readonly starts: number[] = [];
  private readonly windows = new Map<string, Window>();
  /** Items of requests sent and not yet answered: an answer's counts do not hold them yet. */
  private inFlight = 0;

  /**
   * Books a request of `items` to start now and says 0, or says how long to
   * wait before asking again (nothing is booked then: answers that come in
   * the meantime decide the next ask).
   */
  reserve(items: number, now: number): number {
    let wait = 0;
    for (const [name, w] of this.windows) {
      if (now >= w.clearAt && w.quota === null) {
        this.windows.delete(name);
        continue;
      }
      // A batch over the whole quota never fits: the server's answer says so, not a wait here.
      if (w.quota !== null && items > w.quota) continue;
      const settled = now >= w.lastBlindAt + w.windowMs;
      const room = now < w.clearAt ? w.remaining : w.quota! - (settled ? this.inFlight : w.since);
      if (room >= items) continue;
      // Each wait ends where more room is known; past the last, what holds
      // the room is in flight and unanswered, so no time is known: a whole window is.
      wait = Math.max(wait, now < w.clearAt ? w.clearAt - now : settled ? w.windowMs : w.lastBlindAt + w.windowMs - now);
    }
    const perWindow = Math.max(1, Math.floor(this.keyRequests * KEY_SHARE));
    while (this.starts.length > 0 && this.starts[0]! <= now - this.keyWindowMs) this.starts.shift();
    if (this.starts.length >= perWindow) {
      wait = Math.max(wait, this.starts[this.starts.length - perWindow]! + this.keyWindowMs - now);
    }
    if (wait > 0) return wait;
    this.starts.push(now);
    for (const w of this.windows.values()) {
      w.remaining -= items;
      w.since += items;
    }
    this.inFlight += items;
    return 0;
  }

  /** A request of `items` was answered (or failed); its headers, when it had an answer. */
  answered(items: number, headers: { policy: string | null; state: string | null } | null, now: number): void {
    this.inFlight = Math.max(0, this.inFlight - items);
    if (headers === null) {
      for (const w of this.windows.values()) w.lastBlindAt = now;
      return;
    }
    const policies = parseFields(headers.policy);
    const key = policies.get('per_key');
    if (key !== undefined && key.q !== undefined && key.q > 0 && key.w !== undefined && key.w > 0) {
      this.keyRequests = key.q;
      this.keyWindowMs = key.w * 1000;
    }
    for (const [name, s] of parseFields(headers.state)) {
      if (name === 'per_key' || s.r === undefined || s.t === undefined) continue;
      const policy = policies.get(name);
      const known = policy?.q !== undefined && policy.w !== undefined && policy.w > 0;
      // Without a policy the window's length is unknown: its room is trusted until its oldest count leaves, then forgotten.
      const windowMs = known ? policy.w! * 1000 : s.t * 1000;
      this.windows.set(name, {
        quota: known ? policy.q! : null,
        remaining: s.r - this.inFlight,
        clearAt: now + windowMs,
        windowMs,
        since: this.inFlight,
        lastBlindAt: -Infinity,
      });
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
