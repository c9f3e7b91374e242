import { Agent, request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { AnswerTally, type LoadFigures, batchHeaders } from './load.js';

/** One request of a closed loop: whose key, which body. */
export interface LoopRequest {
  key: string;
  body: Buffer;
}

export interface ClosedLoopOptions {
  /** Servers to send to; connection i goes to urls[i % urls.length]. */
  urls: readonly string[];
  path: string;
  connections: number;
  itemsPerBody: number;
  gzip: boolean;
  next: () => LoopRequest | Promise<LoopRequest>;
  /** Stop sending after this long; requests in flight are still answered and counted. */
  seconds: number;
  /** Or as soon as this holds (checked before each request). */
  until?: (tally: AnswerTally) => boolean;
}

/** p50/p90/p99/max of latencies in ms, sorted in place; zeros when there are none. */
export function percentiles(latencies: number[]): Pick<LoadFigures, 'p50Ms' | 'p90Ms' | 'p99Ms' | 'maxMs'> {
  latencies.sort((a, b) => a - b);
  const n = latencies.length;
  const pct = (p: number): number => (n === 0 ? 0 : latencies[Math.min(n - 1, Math.ceil((p / 100) * n) - 1)]!);
  return { p50Ms: pct(50), p90Ms: pct(90), p99Ms: pct(99), maxMs: n === 0 ? 0 : latencies[n - 1]! };
}

/** One POST over a kept-alive agent; resolves with the status and body, or rejects on a network error. */
export function post(agent: Agent, url: URL, headers: Record<string, string>, body: Buffer): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { ...headers, 'content-length': String(body.length) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    // A server that stopped answering must not keep the run waiting forever.
    req.setTimeout(30_000, () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Closed-loop load over plain node:http, for workloads autocannon cannot
 * drive: a key per request (many tenants), several servers at once, a body
 * that may have to wait for its tenant's room, or a stop at a count. Each
 * connection sends its next request as soon as the previous one is answered.
 * Latency runs from sending to the last byte of the answer.
 */
export async function httpClosedLoop(o: ClosedLoopOptions): Promise<LoadFigures> {
  const tally = new AnswerTally();
  const latencies: number[] = [];
  let requests = 0;
  let errors = 0;
  let timeouts = 0;
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  const deadline = start + o.seconds * 1000;
  let last = start;
  const headersOf = (key: string) => batchHeaders(key, o.gzip);
  const worker = async (i: number): Promise<void> => {
    const url = new URL(o.path, o.urls[i % o.urls.length]!);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    let failuresInARow = 0;
    try {
      while (performance.now() < deadline && !(o.until?.(tally) ?? false)) {
        const r = await o.next();
        if (performance.now() >= deadline) break;
        const t0 = performance.now();
        try {
          const { status, text } = await post(agent, url, headersOf(r.key), r.body);
          last = performance.now();
          tally.record(status, text);
          if (status >= 200 && status < 300) {
            requests++;
            latencies.push(last - t0);
          }
          failuresInARow = 0;
        } catch (e) {
          if ((e as Error).message === 'timeout') timeouts++;
          errors++;
          // A server that went away must not turn the loop into a spin.
          if (++failuresInARow >= 20) throw new Error(`${url.href}: ${failuresInARow} requests in a row failed: ${(e as Error).message}`);
          await sleep(50);
        }
      }
    } finally {
      agent.destroy();
    }
  };
  await Promise.all(Array.from({ length: o.connections }, (_, i) => worker(i)));
  const seconds = Math.max(0.001, (last - start) / 1000);
  return {
    seconds,
    requests,
    eventsPerSec: (requests * o.itemsPerBody) / seconds,
    requestsPerSec: requests / seconds,
    ...percentiles(latencies),
    non2xx: tally.non2xx,
    errors,
    timeouts,
    ...tally.figures(cpu0),
  };
}
