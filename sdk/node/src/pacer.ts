/**
 * Keeps a client within the server's rate limits by what the server says,
 * never by a guess of its own, so that sending as fast as it can costs waits
 * here rather than 429s.
 *
 * Two kinds of limit: the project's item windows, which every answer that
 * reached them states in `RateLimit-Policy` / `RateLimit` (a 429 too), and the
 * key's requests per second, which the server names only on the 429 that
 * enforces it. Until an answer names the key's limit, the server's default is
 * assumed.
 *
 * For a project window the newest answer says `r`, the items the window still
 * takes, and `t`, the seconds until its oldest count leaves. A request takes
 * at most the room `r` leaves less what was sent since; a batch larger than
 * that goes in parts, the rest as more room is stated. With no room left, the
 * next request waits `t`: once the oldest count has left, there is room for
 * at least one item, since every count is of one item or more. Requests still
 * in flight may take that room, so their answers are awaited instead; with
 * none in flight, one item goes, and its answer states the room again.
 */

/** The server's default requests per second for one key. */
export const DEFAULT_KEY_RPS = 100;
/** Share of the key's limit used: the server counts arrivals, and they bunch up on the way. */
const KEY_SHARE = 0.8;
/** The key's limit is a one-second window. */
const KEY_WINDOW_MS = 1000;

/** What the pacer allows now: a request of `items` (booked under `ticket`), or a wait (Infinity: until an answer comes). */
export type Grant = { items: number; ticket: number } | { waitMs: number };

/** A project window as the client last heard of it, for progress displays. */
export interface RateLimitWindow {
  /** The policy's name: `burst`, `sustained`, `import`. */
  name: string;
  /** Its quota (`q`) and length (`w`, in ms), when the answer gave its policy. */
  quota: number | null;
  windowMs: number | null;
  /** Items it takes now: the answer's `r`, less what was sent since. At most 0 when full. */
  room: number;
  /** Milliseconds until its oldest count leaves (the answer's `t`, counted from the answer). */
  resetMs: number;
}

/** One project window as the newest answer stated it. */
interface Window {
  quota: number | null;
  windowMs: number | null;
  /** The answer's `r`. */
  remaining: number;
  /** When its oldest count leaves: the answer's time plus `t`. */
  resetAt: number;
  /** Items sent since that answer, or in flight then: `r` may not hold them yet. */
  since: number;
  /** The ticket of the request whose answer this is. */
  ticket: number;
}

export class Pacer {
  private keyRequests = DEFAULT_KEY_RPS;
  private keyWindowMs = KEY_WINDOW_MS;
  /** When each request of the last key window started, in order. */
  private readonly starts: number[] = [];
  private readonly windows = new Map<string, Window>();
  /** Items of requests booked and not yet answered. */
  private inFlight = 0;
  private lastTicket = 0;

  /** Books a request of at most `want` items to start now, or says how long to wait before asking again. */
  reserve(want: number, now: number): Grant {
    let items = want;
    let wait = 0;
    let awaitAnswer = false;
    for (const w of this.windows.values()) {
      const room = w.remaining - w.since;
      if (room >= 1) items = Math.min(items, room);
      else if (now < w.resetAt) wait = Math.max(wait, w.resetAt - now);
      else if (this.inFlight > 0) awaitAnswer = true;
      else items = 1;
    }
    const perWindow = Math.max(1, Math.floor(this.keyRequests * KEY_SHARE));
    while (this.starts.length > 0 && this.starts[0]! <= now - this.keyWindowMs) this.starts.shift();
    if (this.starts.length >= perWindow) wait = Math.max(wait, this.starts[this.starts.length - perWindow]! + this.keyWindowMs - now);
    if (wait > 0) return { waitMs: wait };
    if (awaitAnswer) return { waitMs: Infinity };
    this.starts.push(now);
    for (const w of this.windows.values()) w.since += items;
    this.inFlight += items;
    return { items, ticket: ++this.lastTicket };
  }

  /**
   * The request booked under `ticket`, of `items`, was answered, with these
   * header fields; null when it got no answer (its items may have been
   * counted, so they stay in every window's `since`).
   */
  answered(ticket: number, items: number, headers: { policy: string | null; state: string | null } | null, now: number): void {
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
      // Answers may come back out of order: one to a request booked earlier says less than the one already heard.
      const known = this.windows.get(name);
      if (known !== undefined && known.ticket > ticket) continue;
      const policy = policies.get(name);
      const stated = policy?.q !== undefined && policy.w !== undefined && policy.w > 0;
      this.windows.set(name, {
        quota: stated ? policy.q! : null,
        windowMs: stated ? policy.w! * 1000 : null,
        remaining: s.r,
        resetAt: now + s.t * 1000,
        // Every other request in flight may or may not be in `r`: counted as not, so room is never overstated.
        since: this.inFlight,
        ticket,
      });
    }
  }

  /** The project windows as last stated, at `now`. */
  state(now: number): RateLimitWindow[] {
    return [...this.windows].map(([name, w]) => ({
      name,
      quota: w.quota,
      windowMs: w.windowMs,
      room: w.remaining - w.since,
      resetMs: Math.max(0, w.resetAt - now),
    }));
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
