import type { LimitResult, Limiter, WindowSpec } from '../../limiters/port.js';

/** The numbers in force; 0 turns a limit off. */
export interface LimitSettings {
  burst: number;
  sustained: number;
  keyRps: number;
  /** Items per 60 s sent to the historical import endpoint, counted apart from burst and sustained. */
  import: number;
}

export const DEFAULT_LIMITS: LimitSettings = { burst: 50_000, sustained: 60_000, keyRps: 100, import: 300_000 };

/** Which endpoint's windows a request counts in: the live batch endpoint's, or the import endpoint's. */
export type WindowGroup = 'batch' | 'import';

/**
 * The project windows (docs/design.md, "Limits"): their lengths are fixed, their quotas configurable.
 * Imports count in a window of their own, so a backfill never takes the
 * room live traffic needs.
 */
export const PROJECT_WINDOWS = [
  { name: 'burst', setting: 'burst', windowMs: 10_000, retryAfter: 10, group: 'batch' },
  { name: 'sustained', setting: 'sustained', windowMs: 60_000, retryAfter: 60, group: 'batch' },
  { name: 'import', setting: 'import', windowMs: 60_000, retryAfter: 60, group: 'import' },
] as const;

/** Retry-After of a refusal by the per-key requests-per-second limit. */
export const KEY_RETRY_AFTER = 10;

interface Policy {
  name: (typeof PROJECT_WINDOWS)[number]['name'];
  limit: number;
  windowMs: number;
  retryAfter: number;
}

/** What a check decided, and what the RateLimit headers say about it. */
export interface Verdict {
  allowed: boolean;
  /** Seconds for Retry-After when refused. */
  retryAfter: number;
  /** RateLimit-Policy and RateLimit values, absent when no policy is on. */
  headers: Record<string, string>;
}

/**
 * The limits of Inlet: per project, items in a 10 s burst window and a 60 s
 * sustained window; per key, requests per second. Windows slide: a count
 * leaves a window exactly windowMs after it entered.
 */
export class RateLimits {
  private readonly groups = new Map<WindowGroup, { policies: Policy[]; header: string }>();
  private readonly settings: LimitSettings;

  constructor(
    private readonly limiter: Limiter,
    settings: Omit<LimitSettings, 'import'> & Partial<Pick<LimitSettings, 'import'>>,
  ) {
    this.settings = { ...settings, import: settings.import ?? DEFAULT_LIMITS.import };
    for (const group of ['batch', 'import'] as const) {
      const policies = PROJECT_WINDOWS.filter((w) => w.group === group)
        .map((w) => ({ name: w.name, limit: this.settings[w.setting], windowMs: w.windowMs, retryAfter: w.retryAfter }))
        .filter((p) => p.limit > 0);
      this.groups.set(group, { policies, header: policies.map((p) => `"${p.name}";q=${p.limit};w=${p.windowMs / 1000}`).join(', ') });
    }
  }

  /** The key-rate check: one request against the key's 1-second window. */
  async checkKey(keyId: string, now: number): Promise<Verdict> {
    if (this.settings.keyRps <= 0) return { allowed: true, retryAfter: 0, headers: {} };
    const limit = this.settings.keyRps;
    const r = await this.limiter.take([{ key: `key:${keyId}`, limit, windowMs: 1000 }], 1, now);
    if (r.allowed) return { allowed: true, retryAfter: 0, headers: {} };
    // The refusal names the limit that tripped, in the same header fields as the project windows.
    return {
      allowed: false,
      retryAfter: KEY_RETRY_AFTER,
      headers: { 'RateLimit-Policy': `"per_key";q=${limit};w=1`, RateLimit: `"per_key";r=0;t=${this.resetSeconds(r.windows[0]!.oldestExpiresAt, now)}` },
    };
  }

  /** The project-rate check: every item of the request against the project's windows of its endpoint, all or nothing. */
  async checkItems(projectId: string, items: number, now: number, group: WindowGroup = 'batch'): Promise<Verdict> {
    const { policies, header } = this.groups.get(group)!;
    if (policies.length === 0) return { allowed: true, retryAfter: 0, headers: {} };
    // The braces are a Redis hash tag: a project's windows share one slot, so
    // the one script that checks them all also runs on Redis Cluster.
    const specs: WindowSpec[] = policies.map((p) => ({ key: `${p.name}:{${projectId}}`, limit: p.limit, windowMs: p.windowMs }));
    const r = await this.limiter.take(specs, items, now);
    return { allowed: r.allowed, retryAfter: this.retryAfter(policies, r, items), headers: this.headers(policies, header, r, now) };
  }

  /** The longest wait among the windows the request did not fit in. */
  private retryAfter(policies: Policy[], r: LimitResult, items: number): number {
    let wait = 0;
    policies.forEach((p, i) => {
      if (r.windows[i]!.used + items > p.limit) wait = Math.max(wait, p.retryAfter);
    });
    return r.allowed ? 0 : wait;
  }

  /** Whole seconds until the oldest count leaves its window. */
  private resetSeconds(oldestExpiresAt: number | null, now: number): number {
    return oldestExpiresAt === null ? 0 : Math.max(0, Math.ceil((oldestExpiresAt - now) / 1000));
  }

  private headers(policies: Policy[], header: string, r: LimitResult, now: number): Record<string, string> {
    const state = policies.map((p, i) => {
      const w = r.windows[i]!;
      const remaining = Math.max(0, p.limit - w.used);
      return `"${p.name}";r=${remaining};t=${this.resetSeconds(w.oldestExpiresAt, now)}`;
    });
    return { 'RateLimit-Policy': header, RateLimit: state.join(', ') };
  }
}
