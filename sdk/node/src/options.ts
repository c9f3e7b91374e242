/** The client's options, with their defaults and limits. */
import { type Clock, realClock } from './clock.js';
import type { ItemResult } from './types.js';

/** What a retry is about to do, for logs and tests. */
export interface RetryInfo {
  /** The attempt that just failed, from 1. */
  attempt: number;
  /** How long the client waits before the next one. */
  waitMs: number;
  items: number;
  status?: number;
  code?: string;
  error?: string;
}

export interface InletOptions {
  /** A server key (`srv_live_…`). */
  key: string;
  /** Where Inlet runs, such as `http://localhost:8080`. */
  baseUrl: string;
  /** Send when this many items wait (at most 500, the API's batch limit). Default 500. */
  flushAt?: number;
  /** Or after the first waiting item has waited this long. Default 1000. */
  flushIntervalMs?: number;
  /**
   * Items held, not yet delivered, past which track/identify return false and
   * the client sends without waiting for flushAt or flushIntervalMs; await
   * drain() to wait until it holds fewer. Default 10,000.
   */
  maxQueue?: number;
  /** Bytes of JSON held, not yet delivered, past which track/identify throw QueueFullError. Default 64 MiB. */
  maxQueueBytes?: number;
  /** Retries of a batch after its first attempt; Infinity retries while the server answers. Default 10. */
  maxRetries?: number;
  /** Time limit of one attempt. Default 10,000. */
  timeoutMs?: number;
  /** Compress bodies with gzip. Default true. */
  gzip?: boolean;
  /** Every item's final outcome, as soon as it is known. */
  onResult?: (result: ItemResult) => void;
  /** Called before each retry. */
  onRetry?: (info: RetryInfo) => void;
  /** First backoff step; it doubles per retry, with jitter, up to retryMaxMs. Default 500. */
  retryBaseMs?: number;
  /** Longest backoff between attempts (a longer Retry-After is still honoured). Default 30,000. */
  retryMaxMs?: number;
  /** Time limit of close() when it is given none; Infinity waits for every outcome. Default 10,000. */
  closeTimeoutMs?: number;
  /**
   * How long the server may stay out of reach (every attempt meets no answer
   * or a 5xx) before every item held fails. Default Infinity: only
   * maxRetries and close() bound the retries.
   */
  unreachableTimeoutMs?: number;
  /** Batches in flight at once. Default 2. */
  concurrency?: number;
  /** The endpoint's path. Default `/api/v1/batch`; `/api/v1/import` for historical backfill. */
  path?: string;
  /** The time the client reads and waits on; the real one by default (a simulation or a test passes its own). */
  clock?: Clock;
}

export type Settings = Required<Omit<InletOptions, 'onResult' | 'onRetry'>> & Pick<InletOptions, 'onResult' | 'onRetry'>;

/** The API refuses batches of more than this many items. */
export const MAX_BATCH_ITEMS = 500;

/** Options with defaults filled in; throws a TypeError on a setting that cannot work. */
export function settle(o: InletOptions): Settings {
  if (typeof o.key !== 'string' || o.key === '') throw new TypeError('Inlet: "key" is required: pass your server key (srv_live_…).');
  if (typeof o.baseUrl !== 'string' || !/^https?:\/\//.test(o.baseUrl)) {
    throw new TypeError('Inlet: "baseUrl" is required: pass where Inlet runs, such as "http://localhost:8080".');
  }
  const s: Settings = {
    flushAt: MAX_BATCH_ITEMS,
    flushIntervalMs: 1000,
    maxQueue: 10_000,
    maxQueueBytes: 64 * 1024 * 1024,
    maxRetries: 10,
    timeoutMs: 10_000,
    gzip: true,
    retryBaseMs: 500,
    retryMaxMs: 30_000,
    closeTimeoutMs: 10_000,
    unreachableTimeoutMs: Infinity,
    concurrency: 2,
    path: '/api/v1/batch',
    clock: realClock,
    ...withoutUndefined(o),
  };
  positive(s, 'flushAt');
  if (s.flushAt > MAX_BATCH_ITEMS) throw new TypeError(`Inlet: "flushAt" may be at most ${MAX_BATCH_ITEMS}, the API's batch limit.`);
  for (const name of ['flushIntervalMs', 'maxQueue', 'maxQueueBytes', 'timeoutMs', 'concurrency'] as const) positive(s, name);
  for (const name of ['retryBaseMs', 'retryMaxMs'] as const) {
    if (!Number.isFinite(s[name]) || s[name] < 0) throw new TypeError(`Inlet: "${name}" must be a number of at least 0.`);
  }
  for (const name of ['maxRetries', 'closeTimeoutMs', 'unreachableTimeoutMs'] as const) {
    if (typeof s[name] !== 'number' || Number.isNaN(s[name]) || s[name] < 0) throw new TypeError(`Inlet: "${name}" must be a number of at least 0, or Infinity.`);
  }
  return s;
}

function positive(s: Settings, name: 'flushAt' | 'flushIntervalMs' | 'maxQueue' | 'maxQueueBytes' | 'timeoutMs' | 'concurrency'): void {
  if (!Number.isFinite(s[name]) || s[name] < 1) throw new TypeError(`Inlet: "${name}" must be a number of at least 1.`);
}

function withoutUndefined(o: InletOptions): InletOptions {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as unknown as InletOptions;
}

/** Exponential backoff with jitter (half fixed, half random), capped; never shorter than Retry-After. */
export function backoffMs(s: Pick<Settings, 'retryBaseMs' | 'retryMaxMs'>, attempt: number, retryAfterMs: number | null, random = Math.random): number {
  const step = Math.min(s.retryMaxMs, s.retryBaseMs * 2 ** (attempt - 1));
  const jittered = step / 2 + random() * (step / 2);
  return Math.max(jittered, retryAfterMs ?? 0);
}
