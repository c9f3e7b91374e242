import { setTimeout as sleep } from 'node:timers/promises';
import type { LimitWindow } from './budget.js';
import { WindowBudget } from './budget.js';
import { type BodyPool, ROUNDS, bodyAt } from './payloads.js';

/** What a run needs to send batches as one tenant: a key whose project has the API on. */
export interface Tenant {
  key: string;
  projectId: string;
  sourceId: string;
}

/**
 * The per-key requests-per-second limit is not named in 2xx answers (only in
 * its own 429), so the tenants workload holds to the default of the settings.
 */
export const DEFAULT_KEY_RPS_WINDOW: LimitWindow = { name: 'per_key', limit: 100, windowMs: 1000, unit: 'requests' };

/** The most tenants: each gets one character of ROUNDS in its insert_ids. */
export const MAX_TENANTS = ROUNDS.length;

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
 * generated with a spare character at the end of its prefix). A tenant whose
 * next request would take it past 90% of one of its limits is skipped until
 * it has room, and when none has room the request waits: the workload is
 * meant to stay within the limits, so a 429 says the bench broke its premise.
 */
export class TenantCursor {
  private next0 = 0;
  private readonly nth: number[];
  private readonly budget: WindowBudget;
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
  ) {
    if (tenants.length > MAX_TENANTS) throw new Error(`at most ${MAX_TENANTS} tenants`);
    this.nth = tenants.map(() => 0);
    this.budget = new WindowBudget(tenants.length, windows);
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
      return { tenant: t, key: this.tenants[t]!.key, body: bodyAt(this.pool, k, round, ROUNDS[t]!) };
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
