/**
 * What a server does after a load stops: `big` (closed loop, 8 connections,
 * BENCH_SECONDS, 10, after a 2 s warm-up and a quiet wait) on a fresh
 * embedded store, then the server's CPU until it has been quiet for 3 s.
 * At the peak the fold of a person's events (domain/people/person-events-fold.ts)
 * yields to requests, so the closed-loop rows of `npm run bench` leave out
 * the work it does once the load eases: this prints both, per event stored
 * in the phase, split as `destination.ts` splits them (the thread that
 * answers requests, the others).
 *
 *   npm run build && npx tsc -p bench/tsconfig.json && node dist/bench/bench/after-load.js
 *
 * AFTER_LOAD_ROUNDS (3); BENCH_COMPARE names another built checkout, run in
 * turn with this one each round; BENCH_CPU_PROF, a directory where each
 * server writes a CPU profile. Not part of npm run bench.
 */
import { closedLoop } from './load.js';
import { BodyCursor, generatePool } from './payloads.js';
import { cpuSeconds, threadCpu, threadShares } from './proc-stats.js';
import { ROOT, startKeyedServer } from './processes.js';

const ROUNDS = Number(process.env.AFTER_LOAD_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 8;
/** A second the server used less CPU than this is a quiet one (a profiler's sampling takes more). */
const QUIET_CPU_SECONDS = process.env.BENCH_CPU_PROF ? 0.15 : 0.03;
const QUIET_SECONDS = 3;
/** A server still busy this long after the load is reported as never quiet. */
const QUIET_WAIT_LIMIT_S = 600;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Samples the process's CPU once a second until QUIET_SECONDS quiet seconds
 * in a row (or QUIET_WAIT_LIMIT_S): the CPU seconds read when the quiet
 * seconds began (theirs are not the work after the load), when that was,
 * and whether it went quiet.
 */
async function untilQuiet(pid: number): Promise<{ cpu: number; at: number; quiet: boolean }> {
  let last = cpuSeconds(pid);
  let lastAt = Date.now();
  let streak = { cpu: last, at: lastAt };
  const began = lastAt;
  for (let quiet = 0; quiet < QUIET_SECONDS; ) {
    if (lastAt - began > QUIET_WAIT_LIMIT_S * 1000) return { cpu: last, at: lastAt, quiet: false };
    await sleep(1000);
    const now = cpuSeconds(pid);
    if (now - last < QUIET_CPU_SECONDS) quiet++;
    else quiet = 0;
    if (quiet === 0) streak = { cpu: now, at: Date.now() };
    last = now;
    lastAt = Date.now();
  }
  return { ...streak, quiet: true };
}

/** One server's round: the work after the load per event stored in it, and the line that says it all. */
async function round(checkout: string, pool: ReturnType<typeof generatePool>): Promise<{ afterUs: number; line: string }> {
  const { server, key, stop } = await startKeyedServer(checkout, 'after-load');
  try {
    const side = { url: server.url, key };
    const cursor = new BodyCursor(pool);
    await closedLoop(side, cursor, CONNECTIONS, 2);
    // What the warm-up left to do is done before the phase: the phase's events alone are counted after it.
    if (!(await untilQuiet(server.pid)).quiet) throw new Error(`The server was not quiet within ${QUIET_WAIT_LIMIT_S} s of the warm-up.`);
    const cpu0 = cpuSeconds(server.pid);
    const threads0 = threadCpu(server.pid);
    const load = await closedLoop(side, cursor, CONNECTIONS, SECONDS);
    const cpu1 = cpuSeconds(server.pid);
    const threads1 = threadCpu(server.pid);
    const ended = Date.now();
    const { cpu: cpu2, at, quiet } = await untilQuiet(server.pid);
    const events = load.eventsPerSec * load.seconds;
    const during = threadShares(threads0, threads1, events);
    const after = threadShares(threads1, threadCpu(server.pid), events);
    const us = (s: number) => (s / events) * 1e6;
    return {
      afterUs: us(cpu2 - cpu1),
      line:
        `${Math.round(load.eventsPerSec)} ev/s; in the phase ${us(cpu1 - cpu0).toFixed(2)} µs/ev (request thread ${during.busiest.toFixed(2)}, others ${during.rest.toFixed(2)}); ` +
        `after it, ${((at - ended) / 1000).toFixed(1)} s ${quiet ? 'until quiet' : 'and never quiet'}, ${us(cpu2 - cpu1).toFixed(2)} µs/ev more (request thread ${after.busiest.toFixed(2)}, others ${after.rest.toFixed(2)})`,
    };
  } finally {
    await stop();
  }
}

async function main(): Promise<void> {
  const pool = generatePool({ name: 'big', prefix: 'a', seed: 1, bodies: 400, itemsPerBody: 500, gzip: false, now: Date.now() });
  const sides = process.env.BENCH_COMPARE ? [['A', ROOT], ['B', process.env.BENCH_COMPARE]] : [['A', ROOT]];
  const after: Record<string, number[]> = {};
  for (let r = 1; r <= ROUNDS; r++) {
    // The order alternates by round: the machine's speed drifts.
    for (const [name, checkout] of r % 2 === 1 ? sides : [...sides].reverse()) {
      const got = await round(checkout!, pool);
      (after[name!] ??= []).push(got.afterUs);
      console.log(`round ${r} ${name}: ${got.line}`);
    }
  }
  for (const [name, xs] of Object.entries(after)) {
    const sorted = [...xs].sort((a, b) => a - b);
    console.log(`${name}: after the load, µs/ev min / median / max: ${sorted[0]!.toFixed(2)} / ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2)} / ${sorted.at(-1)!.toFixed(2)}`);
  }
}

await main();
