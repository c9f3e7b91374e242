import autocannon from 'autocannon';
import type { BodyCursor } from './payloads.js';

/** What one measured phase of load produced, as the client saw it. */
export interface LoadFigures {
  seconds: number;
  requests: number;
  /** Items in requests answered 2xx, per second. */
  eventsPerSec: number;
  requestsPerSec: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  non2xx: number;
  /** 429 answers among the non-2xx: the server's rate limits refused the request. */
  rateLimited: number;
  errors: number;
  timeouts: number;
  /** From the 2xx answers: items stored or answered as repeats, and the repeats alone. */
  accepted: number;
  duplicates: number;
  refusedItems: number;
  droppedItems: number;
  /** CPU the load generator itself used, in seconds (it shares the machine). */
  loadgenCpuSec: number;
  /** The first non-2xx answer or item error seen, to say why a run went wrong. */
  firstRefusal?: string;
}

export interface Target {
  url: string;
  key: string;
}

/** Counts what the 2xx answers say about their items. */
export class AnswerTally {
  accepted = 0;
  duplicates = 0;
  refused = 0;
  dropped = 0;
  statuses = new Map<number, number>();
  firstRefusal: string | null = null;

  /** Answers outside 2xx. */
  get non2xx(): number {
    let n = 0;
    for (const [status, k] of this.statuses) if (status < 200 || status > 299) n += k;
    return n;
  }

  /** Items stored by the answers so far: accepted, less the repeats of items stored before. */
  get stored(): number {
    return this.accepted - this.duplicates;
  }

  /** The item counts and the load generator's CPU since `cpu0`, as LoadFigures holds them. */
  figures(cpu0: NodeJS.CpuUsage): Pick<LoadFigures, 'rateLimited' | 'accepted' | 'duplicates' | 'refusedItems' | 'droppedItems' | 'loadgenCpuSec' | 'firstRefusal'> {
    const cpu = process.cpuUsage(cpu0);
    return {
      rateLimited: this.statuses.get(429) ?? 0,
      accepted: this.accepted,
      duplicates: this.duplicates,
      refusedItems: this.refused,
      droppedItems: this.dropped,
      loadgenCpuSec: (cpu.user + cpu.system) / 1e6,
      ...(this.firstRefusal !== null ? { firstRefusal: this.firstRefusal } : {}),
    };
  }

  record(status: number, body: string): void {
    this.statuses.set(status, (this.statuses.get(status) ?? 0) + 1);
    if (status < 200 || status > 299) {
      this.firstRefusal ??= `${status} ${body.slice(0, 500)}`;
      return;
    }
    try {
      const a = JSON.parse(body) as { accepted?: number; duplicates?: unknown[]; errors?: unknown[]; dropped?: unknown[] };
      this.accepted += a.accepted ?? 0;
      this.duplicates += a.duplicates?.length ?? 0;
      this.refused += a.errors?.length ?? 0;
      this.dropped += a.dropped?.length ?? 0;
      if ((a.errors?.length ?? 0) > 0) this.firstRefusal ??= `${status} ${body.slice(0, 500)}`;
    } catch {
      this.firstRefusal ??= `${status} (not JSON) ${body.slice(0, 200)}`;
    }
  }
}

export function batchHeaders(key: string, gzip: boolean): Record<string, string> {
  return {
    authorization: `Bearer ${key}`,
    'content-type': 'application/json',
    ...(gzip ? { 'content-encoding': 'gzip' } : {}),
  };
}

/**
 * Closed-loop load: every connection sends its next batch as soon as the
 * previous one is answered, so this finds the peak rate. Each request takes
 * the next body from the cursor, so no two connections send the same one.
 */
export async function closedLoop(target: Target, cursor: BodyCursor, connections: number, seconds: number): Promise<LoadFigures> {
  const tally = new AnswerTally();
  const cpu0 = process.cpuUsage();
  const r = await autocannon({
    url: target.url,
    connections,
    pipelining: 1,
    duration: seconds,
    timeout: 30,
    requests: [
      {
        method: 'POST',
        path: '/api/v1/batch',
        headers: batchHeaders(target.key, cursor.pool.gzip),
        setupRequest: (req) => ({ ...req, body: cursor.next() }),
        onResponse: (status, body) => tally.record(status, body),
      },
    ],
  });
  const ok = r['2xx'];
  return {
    seconds: r.duration,
    requests: ok,
    eventsPerSec: (ok * cursor.pool.itemsPerBody) / r.duration,
    requestsPerSec: ok / r.duration,
    p50Ms: r.latency.p50,
    p90Ms: r.latency.p90,
    p99Ms: r.latency.p99,
    maxMs: r.latency.max,
    non2xx: r.non2xx,
    errors: r.errors,
    timeouts: r.timeouts,
    ...tally.figures(cpu0),
  };
}
