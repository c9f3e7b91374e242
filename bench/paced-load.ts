import { Agent } from 'node:http';
import { performance } from 'node:perf_hooks';
import { percentiles, post } from './http-loop.js';
import { AnswerTally, type LoadFigures, type Target, batchHeaders } from './load.js';
import type { BodyCursor } from './payloads.js';

/**
 * Open-loop load at a constant rate, as wrk2 does: request n is due at
 * start + n/rate whatever happened to the ones before, and its latency is
 * counted from when it was due, so a stall shows in the tail instead of
 * slowing the sender down (coordinated omission).
 *
 * autocannon's overallRate is not used here: each connection sends its
 * quota for the second back to back and then waits, so "80 %" means full
 * load for 0.8 s of every second, and its correction for coordinated
 * omission takes 1/rate seconds as milliseconds.
 */
export async function constantRate(target: Target, cursor: BodyCursor, perSecond: number, seconds: number, maxSockets: number): Promise<LoadFigures> {
  const url = new URL('/api/v1/batch', target.url);
  const agent = new Agent({ keepAlive: true, maxSockets });
  const headers = batchHeaders(target.key, cursor.pool.gzip);
  const tally = new AnswerTally();
  const latencies: number[] = [];
  let errors = 0;
  let inFlight = 0;
  let allSent: () => void = () => {};
  const drained = new Promise<void>((r) => (allSent = r));
  const total = Math.max(1, Math.round(perSecond * seconds));
  const cpu0 = process.cpuUsage();
  const start = performance.now();
  let sent = 0;

  const finish = (): void => {
    inFlight--;
    if (sent === total && inFlight === 0) allSent();
  };
  const fire = (due: number): void => {
    inFlight++;
    post(agent, url, headers, cursor.next()).then(
      ({ status, text }) => {
        if (status >= 200 && status < 300) latencies.push(performance.now() - due);
        tally.record(status, text);
        finish();
      },
      () => {
        errors++;
        finish();
      },
    );
  };
  const tick = (): void => {
    const now = performance.now();
    while (sent < total && start + (sent * 1000) / perSecond <= now) fire(start + (sent++ * 1000) / perSecond);
    if (sent < total) setTimeout(tick, Math.max(0, start + (sent * 1000) / perSecond - performance.now()));
  };
  tick();
  await drained;
  const elapsed = (performance.now() - start) / 1000;
  agent.destroy();

  const ok = latencies.length;
  return {
    seconds: elapsed,
    requests: ok,
    eventsPerSec: (ok * cursor.pool.itemsPerBody) / elapsed,
    requestsPerSec: ok / elapsed,
    ...percentiles(latencies),
    non2xx: tally.non2xx,
    errors,
    timeouts: 0,
    ...tally.figures(cpu0),
  };
}
