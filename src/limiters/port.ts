/**
 * The limiter port. One call checks several sliding windows and, only when
 * the cost fits in all of them, adds it to all of them: atomically, in one
 * round trip. Engines: LocalLimiter (local/, in this process) and the
 * Redis adapter (redis/); both pass the same conformance suite
 * (test/conformance/limiter.test.ts). An adapter imports this file and its
 * driver, nothing above. The rules that call it (which windows, what
 * quotas) are the domain's: domain/limits/policies.ts.
 */
export interface WindowSpec {
  /** Counter name, e.g. "burst:prj_123". */
  key: string;
  limit: number;
  windowMs: number;
}

export interface WindowUse {
  /** What the window holds after the call (the cost included when allowed). */
  used: number;
  /** Epoch ms at which the oldest entry leaves the window; null when empty. */
  oldestExpiresAt: number | null;
}

export interface LimitResult {
  allowed: boolean;
  windows: WindowUse[];
}

export interface Limiter {
  /** Adds `cost` to every window if it fits in each; otherwise adds nothing. */
  take(windows: WindowSpec[], cost: number, now: number): Promise<LimitResult>;
  close(): Promise<void>;
}
