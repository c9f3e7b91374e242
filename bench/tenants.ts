import { setTimeout as sleep } from 'node:timers/promises';
import type { LimitWindow } from './budget.js';
import { WindowBudget } from './budget.js';
import { type BodyPool, ROUNDS, USERS, bodyAt } from './payloads.js';

/** What a run needs to send batches as one tenant: a key whose project has the API on. */
export interface Tenant {
  key: string;
  projectId: string;
  sourceId: string;
}

/**
 * The per-key requests-per-second limit is not named in 2xx answers (only in
 * its own 429), so the tenants workload holds to the default of the settings
 * (or to the raised one, on a deployment with raised limits).
 */
export const DEFAULT_KEY_RPS_WINDOW: LimitWindow = { name: 'per_key', limit: 100, windowMs: 1000, unit: 'requests' };

/** The most tenants: each gets one character of ROUNDS in its insert_ids. */
export const MAX_TENANTS = ROUNDS.length;

/**
 * Users of each tenant by default: the tenants together have as many as the
 * big workload's one project. Every tenant meeting all of the pool's users
 * would make most of a short phase's events bring a new person and link,
 * work `big` does only in its warm-up, and the row would measure that.
 */
export function defaultUsersPerTenant(tenants: number): number {
  return Math.ceil(USERS / Math.max(1, tenants));
}

const DISTINCT_ID_FIELD = Buffer.from('"distinct_id":"user_');
/** Digits of a generated distinct_id (`user_01234`). */
const USER_DIGITS = 5;

/** Byte offsets, per body, of the digits of every distinct_id. */
export function userOffsets(pool: BodyPool): Int32Array[] {
  return pool.raw.map((raw) => {
    const at: number[] = [];
    for (let i = raw.indexOf(DISTINCT_ID_FIELD); i !== -1; i = raw.indexOf(DISTINCT_ID_FIELD, i + 1)) at.push(i + DISTINCT_ID_FIELD.length);
    return Int32Array.from(at);
  });
}

/** Rewrites, in place, every distinct_id `user_n` of a body as `user_(n mod users)`, same length. */
export function foldUsers(body: Buffer, offsets: Int32Array, users: number): void {
  for (const at of offsets) {
    let n = 0;
    for (let i = 0; i < USER_DIGITS; i++) n = n * 10 + (body[at + i]! - 48);
    const folded = String(n % users).padStart(USER_DIGITS, '0');
    body.write(folded, at, 'latin1');
  }
}

/** The share of its connections' time a phase's load generator may wait for a tenant's room before the row is flagged, as a 429 is. */
export const PACING_SHARE = 0.01;

/** The share of the connections' time the load generator held requests back (0 to 1). */
export function heldShare(waitedMs: number, seconds: number, connections: number): number {
  return seconds > 0 && connections > 0 ? Math.min(1, waitedMs / (seconds * 1000 * connections)) : 0;
}

/** Which body of the pool, in which round, a tenant's nth request sends: each tenant goes through the pool in order. */
export function tenantBody(nth: number, bodies: number): { k: number; round: number } {
  return { k: nth % bodies, round: Math.floor(nth / bodies) % ROUNDS.length };
}

export interface TenantRequest {
  tenant: number;
  key: string;
  body: Buffer;
}

/**
 * Hands out requests round robin over the tenants, each tenant with insert_ids
 * of its own (its character of ROUNDS before the round character, in a pool
 * generated with a spare character at the end of its prefix), and with its
 * own `usersPerTenant` users. A tenant whose next request would take it past
 * 90% of one of its limits is skipped until it has room, and when none has
 * room the request waits: the workload stays within the limits, so a 429 says
 * the bench broke its premise. A wait is the load generator's pacing, never
 * the server's speed: the throughput phase runs with windows far above what
 * it can send (heldShare says how much it waited).
 */
export class TenantCursor {
  private next0 = 0;
  private readonly nth: number[];
  private readonly budget: WindowBudget;
  private readonly users: { offsets: Int32Array[]; perTenant: number } | null;
  /** Requests handed out, and those that had to skip a tenant or wait for room. */
  handedOut = 0;
  skipped = 0;
  waitedMs = 0;

  constructor(
    readonly pool: BodyPool,
    readonly tenants: readonly Tenant[],
    windows: readonly LimitWindow[],
    private readonly clock: () => number = () => performance.now(),
    private readonly wait: (ms: number) => Promise<unknown> = sleep,
    /** Distinct users of each tenant; at least USERS leaves the pool's distinct_ids as they are. */
    usersPerTenant = USERS,
  ) {
    if (tenants.length > MAX_TENANTS) throw new Error(`at most ${MAX_TENANTS} tenants`);
    if (!(Number.isInteger(usersPerTenant) && usersPerTenant >= 1)) throw new Error(`users per tenant must be a whole number from 1, not ${usersPerTenant}`);
    this.nth = tenants.map(() => 0);
    this.budget = new WindowBudget(tenants.length, windows);
    this.users = usersPerTenant >= USERS ? null : { offsets: userOffsets(pool), perTenant: usersPerTenant };
    if (this.users !== null && pool.gzip) throw new Error('users are folded in plain JSON bodies only');
  }

  /** Records items sent outside this cursor (a probe), so the budget counts them. */
  account(tenant: number, items: number): void {
    this.budget.take(tenant, items, this.clock());
  }

  /** The next tenant in turn that has room, without waiting; null when none has. */
  tryNext(): TenantRequest | null {
    const n = this.tenants.length;
    const now = this.clock();
    for (let i = 0; i < n; i++) {
      const t = (this.next0 + i) % n;
      if (!this.budget.fits(t, this.pool.itemsPerBody, now)) continue;
      if (i > 0) this.skipped++;
      this.next0 = t + 1;
      this.budget.take(t, this.pool.itemsPerBody, now);
      const { k, round } = tenantBody(this.nth[t]!++, this.pool.raw.length);
      this.handedOut++;
      const body = bodyAt(this.pool, k, round, ROUNDS[t]!);
      if (this.users !== null) foldUsers(body, this.users.offsets[k]!, this.users.perTenant);
      return { tenant: t, key: this.tenants[t]!.key, body };
    }
    return null;
  }

  async next(): Promise<TenantRequest> {
    for (;;) {
      const r = this.tryNext();
      if (r !== null) return r;
      const now = this.clock();
      const at = Math.min(...this.tenants.map((_, t) => this.budget.roomAt(t, this.pool.itemsPerBody, now)));
      if (!Number.isFinite(at)) throw new Error(`a request of ${this.pool.itemsPerBody} items is larger than 90% of a limit`);
      const wait = Math.max(1, at - now);
      this.waitedMs += wait;
      await this.wait(wait);
    }
  }
}
