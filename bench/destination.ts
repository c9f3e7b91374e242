/**
 * The destination workload: `big` ingestion with one webhook destination
 * attached against the same without, and how far delivery falls behind at
 * 80% of the peak (docs/destinations.md, "What it costs").
 *
 *   npm run build && npx tsc -p bench/tsconfig.json && node dist/bench/bench/destination.js
 *
 * A local receiver answers every request at once (204) and reads only the
 * first event's received_at of each batch, for the lag. Each of DEST_ROUNDS
 * (3) rounds, on fresh embedded stores: `big` closed loop (8 connections,
 * BENCH_SECONDS, 10, after a 2 s warm-up) without a destination and with
 * one, the order alternating by round; then, with the destination, after
 * the same warm-up and once delivery has caught up with it, batches at 80%
 * of the round's peak without, for BENCH_SECONDS, and the time until
 * the receiver has every event. BENCH_CPU_PROF: a directory, where each
 * server writes a CPU profile. DEST_KINDS=webhook,s3 attaches an s3
 * destination too (NDJSON.gz into a local s3rver, --every 5s so that the
 * tail drains in seconds): `npm run bench`'s s3 workload runs it so, one
 * round; alone (webhook only) it is not part of npm run bench.
 * DEST_RATE=<events/s> runs only the paced phase, at that rate;
 * DEST_KINDS=none with it runs that phase with no destination.
 * DEST_BACKLOG=1 runs neither: each round stores `big` for BENCH_SECONDS
 * (closed loop) with the destinations paused, then resumes them and
 * measures delivery alone until every event is delivered: its CPU per
 * event without ingestion beside it, to A/B a change to delivery.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { type DestinationResult, RESULT_PREFIX } from './destination-result.js';
import { closedLoop, type LoadFigures } from './load.js';
import { constantRate } from './paced-load.js';
import { BodyCursor, generatePool } from './payloads.js';
import { type ThreadCpu, cpuSeconds, machineBusySeconds, threadCpu, threadShares } from './proc-stats.js';
import { ROOT, startKeyedServer } from './processes.js';
import S3rver from 's3rver';

/** A local S3-compatible store for the s3 destination, in a temporary directory: its endpoint, and its end. */
async function localS3(): Promise<{ endpoint: string; close: () => Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'inlet-bench-s3-'));
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir, configureBuckets: [{ name: 'bench', configs: [] }] });
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    close: async () => {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const ROUNDS = Number(process.env.DEST_ROUNDS ?? 3);
/** The kinds attached on the side with destinations: a webhook, and an s3 destination when named. */
const KINDS = new Set((process.env.DEST_KINDS ?? 'webhook').split(',').map((k) => k.trim()).filter((k) => k !== ''));
/**
 * DEST_KINDS=none, with DEST_RATE: the paced phase with no destination at
 * all, for an A/B of what delivery costs ingestion at one rate (run it
 * alternately with the kinds wanted).
 */
const NONE = KINDS.has('none');
if (NONE && KINDS.size > 1) throw new Error('DEST_KINDS=none names no other kind.');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 8;
/**
 * DEST_RATE (events/s): only the paced phase, at this rate rather than at
 * 80% of the round's peak, which moves with the machine from run to run: for
 * an A/B of delivery's lag at one load, run alternately from two checkouts.
 */
const FIXED_RATE = ((text) => {
  if (text === undefined || text === '') return null;
  const rate = Number(text);
  if (!Number.isFinite(rate) || rate <= 0) throw new Error(`DEST_RATE must be a number of events per second above 0, not "${text}".`);
  return rate;
})(process.env.DEST_RATE);
if (NONE && FIXED_RATE === null) throw new Error('DEST_KINDS=none runs only the paced phase: give DEST_RATE too.');
/** DEST_BACKLOG=1: delivery alone, of a backlog stored with the destinations paused (the header). */
const BACKLOG = process.env.DEST_BACKLOG === '1';
if (BACKLOG && (NONE || FIXED_RATE !== null)) throw new Error('DEST_BACKLOG runs neither the peaks nor the paced phase: leave out DEST_RATE and DEST_KINDS=none.');

/** Receives webhook batches: counts events and notes how long the oldest of each batch waited. */
class Receiver {
  events = 0;
  lagsMs: number[] = [];
  /** When each lag was seen (epoch ms), beside lagsMs. */
  seenAt: number[] = [];
  private waiting: { count: number; resolve: () => void } | null = null;
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const now = Date.now();
      res.writeHead(204).end();
      const body = Buffer.concat(chunks).toString('utf8');
      let n = 0;
      for (let at = body.indexOf('"received_at":"'); at !== -1; at = body.indexOf('"received_at":"', at + 1)) n++;
      const first = body.indexOf('"received_at":"');
      if (first !== -1) {
        this.lagsMs.push(now - Date.parse(body.slice(first + 15, first + 39)));
        this.seenAt.push(now);
      }
      this.events += n;
      if (this.waiting !== null && this.events >= this.waiting.count) this.waiting.resolve();
    });
  });

  async start(): Promise<string> {
    if (!this.server.listening) await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/in`;
  }

  /** Forgets what arrived so far. */
  reset(): void {
    this.events = 0;
    this.lagsMs = [];
    this.seenAt = [];
  }

  /** Resolves once `count` events in all have arrived (with the batch that brings them). */
  until(count: number): Promise<void> {
    if (this.events >= count) return Promise.resolve();
    return new Promise((resolve) => (this.waiting = { count, resolve }));
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

/** The longest lag seen in each 2 s of a phase that began at `began`, through the drain after it: whether delivery fell behind steadily or once. */
function lagByTime(r: Receiver, began: number): number[] {
  const out: number[] = [];
  r.seenAt.forEach((at, i) => {
    const slot = Math.max(0, Math.floor((at - began) / 2000));
    out[slot] = Math.max(out[slot] ?? 0, r.lagsMs[i]!);
  });
  return Array.from(out, (x) => x ?? 0);
}

const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN;
const median = (xs: number[]): number => pct(xs, 0.5);

interface Side {
  url: string;
  key: string;
  pid: number;
  stop: () => Promise<unknown>;
  /** Resolves once the destination has every stored event (asked of `inlet destination list`). */
  drained: () => Promise<void>;
  /** Pauses or resumes every destination of the side. */
  setPaused: (paused: boolean) => Promise<void>;
}

/**
 * A fresh store with a project, source and key, and its server; with a
 * receiver, a webhook destination to it, and once its first batch has
 * arrived (the server found the destination), the side is ready.
 */
async function serve(receiver: Receiver | null, probe: Buffer): Promise<Side> {
  // The receiver is on loopback, which destinations reach only with INLET_DESTINATIONS_ALLOW_PRIVATE.
  const { server, projectId, key, cli, stop } = await startKeyedServer(ROOT, 'destination-bench', { INLET_DESTINATIONS_ALLOW_PRIVATE: 'true' });
  const drained = async () => {
    for (;;) {
      const all = await cli<{ lag_events: number }[]>(['destination', 'list', '--project', projectId]);
      if (all.every((d) => d.lag_events === 0)) return;
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const s3 = receiver !== null && KINDS.has('s3') ? await localS3() : null;
  const destinations: string[] = [];
  if (receiver !== null) {
    destinations.push((await cli<{ id: string }>(['destination', 'create', '--project', projectId, '--kind', 'webhook', '--url', await receiver.start()])).id);
    if (s3 !== null) {
      const made = await cli<{ id: string }>(['destination', 'create', '--project', projectId, '--kind', 's3', '--url', 's3://bench/events', '--endpoint', s3.endpoint,
        '--access-key-id', 'S3RVER', '--secret-access-key', 'S3RVER', '--every', '5s']);
      destinations.push(made.id);
    }
    const res = await fetch(`${server.url}/api/v1/batch`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: probe.toString('utf8') });
    await res.arrayBuffer();
    await receiver.until(1);
    await drained();
    receiver.reset();
  }
  return {
    url: server.url, key, pid: server.pid, drained,
    setPaused: async (paused) => {
      for (const id of destinations) await cli(['destination', paused ? 'pause' : 'resume', id]);
    },
    stop: async () => {
      await stop();
      await s3?.close();
    },
  };
}

interface Figures {
  load: LoadFigures;
  cpuPerEventUs: number;
  /** Per event, in µs: the thread that answers requests, the delivery process, the others. */
  threads: string;
}

/** The server's CPU per event between two readings of its threads, split by thread. */
function threadLine(before: Map<string, ThreadCpu>, pid: number, events: number): string {
  const t = threadShares(before, threadCpu(pid), events);
  return `request thread ${t.busiest.toFixed(1)}, delivery ${t.lowered.toFixed(1)}, others ${t.rest.toFixed(1)} µs/ev`;
}

async function peak(side: Side, cursor: BodyCursor): Promise<Figures> {
  await closedLoop(side, cursor, CONNECTIONS, 2);
  const cpu0 = cpuSeconds(side.pid);
  const threads0 = threadCpu(side.pid);
  const load = await closedLoop(side, cursor, CONNECTIONS, SECONDS);
  const cpu = cpuSeconds(side.pid) - cpu0;
  const events = load.eventsPerSec * load.seconds;
  return { load, cpuPerEventUs: (cpu / events) * 1e6, threads: threadLine(threads0, side.pid, events) };
}

/**
 * Delivery alone: `big` stored for BENCH_SECONDS with the destinations
 * paused, then delivered with nothing else running. The CPU of the delivery
 * process per event, from the resume until every destination has every
 * event, and how long that took.
 */
async function backlogRound(round: number, pool: ReturnType<typeof generatePool>, probe: Buffer): Promise<void> {
  const receiver = new Receiver();
  const side = await serve(receiver, probe);
  try {
    await side.setPaused(true);
    const load = await closedLoop(side, new BodyCursor(pool), CONNECTIONS, SECONDS);
    const events = load.eventsPerSec * load.seconds;
    const threads0 = threadCpu(side.pid);
    await side.setPaused(false);
    await side.drained();
    // From the first batch: a resumed destination waits for the next scan (up to 5 s) before anything is sent.
    const seconds = (Date.now() - receiver.seenAt[0]!) / 1000;
    const t = threadShares(threads0, threadCpu(side.pid), events);
    console.log(
      `round ${round} backlog of ${Math.round(events)} events: delivered in ${seconds.toFixed(1)} s from the first batch (${Math.round(events / seconds)} ev/s), ` +
        `delivery ${t.lowered.toFixed(2)} µs/ev; the server meanwhile: its busiest thread ${t.busiest.toFixed(2)}, the others ${t.rest.toFixed(2)} µs/ev`,
    );
  } finally {
    await side.stop();
    await receiver.close();
  }
}

async function main(): Promise<void> {
  const pool = generatePool({ name: 'big', prefix: 'd', seed: 1, bodies: 400, itemsPerBody: 500, gzip: false, now: Date.now() });
  const ratios: number[] = [];
  const lagMax: number[] = [];
  const heldShares: number[] = [];
  const probe = generatePool({ name: 'probe', prefix: 'q', seed: 2, bodies: 1, itemsPerBody: 500, gzip: false, now: Date.now() }).raw[0]!;
  for (let round = 1; round <= ROUNDS; round++) {
    if (BACKLOG) {
      await backlogRound(round, pool, probe);
      continue;
    }
    const receiver = new Receiver();
    const got: Record<'without' | 'with', Figures> = {} as never;
    const order = round % 2 === 1 ? (['without', 'with'] as const) : (['with', 'without'] as const);
    for (const which of FIXED_RATE === null ? order : []) {
      const side = await serve(which === 'with' ? receiver : null, probe);
      try {
        got[which] = await peak(side, new BodyCursor(pool));
      } finally {
        await side.stop();
      }
    }
    const ratio = FIXED_RATE === null ? got.with.load.eventsPerSec / got.without.load.eventsPerSec : NaN;
    if (FIXED_RATE === null) ratios.push(ratio);

    // At 80% of the peak without, with the destination: how far behind delivery falls, and how long it takes to catch up.
    const paced = new Receiver();
    const side = await serve(NONE ? null : paced, probe);
    let lagLine: string;
    try {
      const rate = (FIXED_RATE ?? 0.8 * got.without.load.eventsPerSec) / pool.itemsPerBody;
      const cursor = new BodyCursor(pool);
      // Warmed up as the peak phases are, and delivered up to date: the phase measures its own events alone.
      await closedLoop(side, cursor, CONNECTIONS, 2);
      await side.drained();
      paced.reset();
      const began = Date.now();
      const threads0 = threadCpu(side.pid);
      const machine0 = machineBusySeconds();
      const server0 = cpuSeconds(side.pid);
      const own0 = process.cpuUsage();
      const load = await constantRate(side, cursor, rate, SECONDS, 64);
      const pacedThreads = threadLine(threads0, side.pid, load.eventsPerSec * load.seconds);
      const own = process.cpuUsage(own0);
      // Whether the machine had CPU left for delivery: the cores busy, and whose (this process is the load, the receiver and the s3 store).
      const cores = `cores busy ${((machineBusySeconds() - machine0) / load.seconds).toFixed(2)} of ${availableParallelism()}: the server and delivery ${((cpuSeconds(side.pid) - server0) / load.seconds).toFixed(2)}, the bench process ${((own.user + own.system) / 1e6 / load.seconds).toFixed(2)}`;
      const ended = Date.now();
      await side.drained();
      const drainMs = Date.now() - ended;
      // Delivery's CPU in the phase depends on how far behind it fell; through the drain it is the whole of the phase's events.
      const drainedDelivery = threadShares(threads0, threadCpu(side.pid), load.eventsPerSec * load.seconds).lowered;
      if (!NONE) lagMax.push(Math.max(...paced.lagsMs));
      heldShares.push(load.eventsPerSec / (rate * pool.itemsPerBody));
      const delivery = NONE
        ? 'no destination'
        : `delivery lag p50 ${median(paced.lagsMs)} ms, p99 ${pct(paced.lagsMs, 0.99)} ms, max ${Math.max(...paced.lagsMs)} ms; every event delivered ${drainMs} ms after the last batch, delivery ${drainedDelivery.toFixed(1)} µs/ev through it; max lag by 2 s of the phase: ${lagByTime(paced, began).join(', ')} ms`;
      lagLine = `paced ${rate.toFixed(1)} req/s (${Math.round(load.eventsPerSec)} ev/s, p99 ${load.p99Ms} ms): ${delivery}; ${pacedThreads}; ${cores}`;
    } finally {
      await side.stop();
      await paced.close();
      await receiver.close();
    }
    const f = (x: Figures) => `${Math.round(x.load.eventsPerSec)} ev/s, ${x.cpuPerEventUs.toFixed(1)} µs/ev (${x.threads}), p99 ${x.load.p99Ms} ms`;
    if (FIXED_RATE === null) console.log(`round ${round} (${order.join(' first, ')} second): without ${f(got.without)}; with ${f(got.with)}; with/without ${ratio.toFixed(3)}`);
    console.log(`round ${round} ${lagLine}`);
  }
  const s = (xs: number[], d = 3) => `${Math.min(...xs).toFixed(d)} / ${median(xs).toFixed(d)} / ${Math.max(...xs).toFixed(d)}`;
  if (ratios.length > 0) console.log(`events/s with ${[...KINDS].join(' and ')} destinations over without, min / median / max: ${s(ratios)}`);
  if (lagMax.length > 0) console.log(`delivery lag at ${FIXED_RATE === null ? '80% of peak' : `${FIXED_RATE} events/s`}, max per round, min / median / max ms: ${s(lagMax, 0)}`);
  console.log(`${RESULT_PREFIX}${JSON.stringify({ ratios, lagMaxMs: lagMax, heldShares } satisfies DestinationResult)}`);
}

await main();
