/**
 * BENCH_COMPARE: two builds of Inlet (A, this checkout; B, the other) measured
 * in one run, phase by phase, for BENCH_ROUNDS rounds: A then B in odd rounds,
 * B then A in even ones. With A always first, whichever build went first
 * measured more server CPU per event and a higher p99 at 80% load: an A/A run
 * of one build gave B/A CPU per event 0.80 to 1.05 (median 0.90) and p99 0.67,
 * and swapping two builds moved the excess to the other build.
 *
 * Each round starts both sides afresh: a new server per side on a new copy of
 * its provisioned store, both running while the round's phases alternate
 * between them. So every round measures the same state (a fresh process and a
 * fresh store), nothing one phase leaves behind (a WAL, pending merges, a
 * grown heap) reaches the other side or the next round, and the rounds are
 * independent samples of each build; the machine's drift falls on both sides
 * of a round alike, as their phases are seconds apart. The full-store
 * comparison cannot start afresh each round (a fill takes minutes), so each
 * side is filled once and its server kept; every round adds the same load to
 * both stores.
 */
import type { AbFigures, AbPair } from './ab-summary.js';
import { abTables } from './ab-summary.js';
import type { BenchConfig } from './config.js';
import { type Checkout, type Deployment, type Engine, type FreshStore, type LimitsMode, type Log, type StoreFactory, startDeployment } from './deploy.js';
import { type Row, SLO_LOAD, fill, interleavedPeaks, paced, peak, short, tenantsRun } from './measure.js';
import type { BodyPool } from './payloads.js';

export interface AbContext {
  cfg: BenchConfig;
  log: Log;
  A: Checkout;
  B: Checkout;
  stores: StoreFactory;
  pools: { big: BodyPool; small: BodyPool | null; gzip: BodyPool | null; fill: BodyPool | null };
  probePool: BodyPool;
  fullStore: boolean;
}

export async function abRun(ctx: AbContext): Promise<{ pairs: AbPair[]; rows: (Row & { round: number })[]; fills: Row[] }> {
  const { cfg, log, pools } = ctx;
  const engine: Engine = cfg.databaseUrl === null ? 'sqlite' : 'postgres';
  const sides = [ctx.A, ctx.B];
  const pairs: AbPair[] = [];
  const rows: (Row & { round: number })[] = [];
  const fills: Row[] = [];
  const closed = (['big', 'small', 'gzip'] as const).filter((w) => cfg.workloads.has(w));
  log(`bench: A/B on ${engine}: A ${ctx.A.root}, B ${ctx.B.root}; ${cfg.rounds} rounds of ${[...closed, ...(cfg.workloads.has('tenants') ? ['tenants'] : [])].join(', ') || 'nothing'}${ctx.fullStore ? `, then ${short(cfg.stored)} stored` : ''}`);

  const start = (side: Checkout, tenants: number, limits: LimitsMode) =>
    ctx.stores.fresh(side, engine, cfg.databaseUrl, tenants).then((store) => startDeployment({ name: side.label, checkout: side, store, servers: 1, limits, probe: ctx.probePool }, log));
  /** Starts one deployment per side, runs `f` on them, and stops them whatever happens. */
  const withBoth = async (tenants: number, limits: LimitsMode, f: (ds: Deployment[]) => Promise<void>): Promise<void> => {
    const ds: Deployment[] = [];
    try {
      for (const side of sides) ds.push(await start(side, tenants, limits));
      await f(ds);
    } finally {
      for (const d of ds) await d.stop(log);
    }
  };
  /** A's and B's rows of one workload in a round, kept as a pair. */
  const keep = (round: number, workload: string, a: Row, b: Row): Row[] => {
    rows.push({ ...a, round }, { ...b, round });
    pairs.push({ round, workload, a: figures(a), b: figures(b) });
    return [a, b];
  };
  /** One phase on each side in turn (A first in odd rounds, B first in even ones), kept as a pair. */
  const both = async (round: number, workload: string, ds: Deployment[], phase: (d: Deployment) => Promise<Row>): Promise<Row[]> => {
    if (round % 2 === 1) {
      const a = await phase(ds[0]!);
      return keep(round, workload, a, await phase(ds[1]!));
    }
    const b = await phase(ds[1]!);
    return keep(round, workload, await phase(ds[0]!), b);
  };
  /**
   * A closed-loop peak of each side: one phase each (A first in odd rounds),
   * or with BENCH_SLICE_SECONDS, in slices taken in turn (B's first in even rounds).
   */
  const peaks = async (round: number, workload: string, ds: Deployment[], pool: BodyPool, connections: number): Promise<Row[]> => {
    if (cfg.sliceSeconds <= 0) return both(round, workload, ds, (d) => peak(d, pool, connections, cfg.seconds, cfg.warmupSeconds, log));
    const order: [Deployment, Deployment] = round % 2 === 1 ? [ds[0]!, ds[1]!] : [ds[1]!, ds[0]!];
    const got = await interleavedPeaks(order, pool, connections, cfg.seconds, cfg.sliceSeconds, cfg.warmupSeconds, log);
    return round % 2 === 1 ? keep(round, workload, got[0], got[1]) : keep(round, workload, got[1], got[0]);
  };
  /** Big batches closed loop, then paced at 80% of the slower side's peak, the same rate for both. */
  const bigPair = async (round: number, ds: Deployment[], suffix: string): Promise<void> => {
    const got = await peaks(round, `big${suffix}`, ds, pools.big, cfg.connections);
    const rate = Math.max(1, SLO_LOAD * Math.min(...got.map((r) => r.requestsPerSec)));
    await both(round, `big @80%${suffix}`, ds, (d) => paced(d, pools.big, rate, cfg.seconds, log));
  };

  for (let round = 1; round <= cfg.rounds; round++) {
    log(`bench: round ${round} of ${cfg.rounds}`);
    if (closed.length > 0) {
      await withBoth(1, 'off', async (ds) => {
        for (const w of closed) {
          if (w === 'big') await bigPair(round, ds, '');
          else await peaks(round, w, ds, pools[w]!, w === 'small' ? cfg.smallConnections : cfg.connections);
        }
      });
    }
    if (cfg.workloads.has('tenants')) {
      // Raised limits, as in a full run: the servers' speed, not the load generator's pacing.
      const o = { probeItems: 2 * ctx.probePool.itemsPerBody, connections: cfg.connections, seconds: cfg.seconds, warmupSeconds: cfg.warmupSeconds, usersPerTenant: cfg.tenantUsers };
      await withBoth(cfg.tenants, 'raised', async (ds) => {
        await both(round, 'tenants', ds, (d) => tenantsRun(d, pools.big, o, log));
      });
    }
  }

  if (ctx.fullStore) {
    // Each side is filled once; every round then starts a server on a copy of
    // that filled store and sends the same bodies, so no round measures a
    // store the rounds before it have grown.
    const filled: { side: Checkout; store: FreshStore; d: Deployment }[] = [];
    try {
      for (const side of sides) {
        const store = await ctx.stores.fresh(side, engine, cfg.databaseUrl, 1);
        let d: Deployment;
        try {
          // Stopping the filling server must leave its store for the copies.
          d = await startDeployment({ name: side.label, checkout: side, store: { ...store, drop: async () => {} }, servers: 1, limits: 'off', probe: ctx.probePool }, log);
        } catch (e) {
          await store.drop();
          throw e;
        }
        filled.push({ side, store, d });
        try {
          const f = await fill(d, pools.fill!, cfg.stored, cfg.fillConnections, log);
          if (f !== null) fills.push(f);
        } finally {
          await d.stop(log);
        }
      }
      for (let round = 1; round <= cfg.rounds; round++) {
        log(`bench: full store, round ${round} of ${cfg.rounds}`);
        const ds: Deployment[] = [];
        try {
          for (const f of filled) {
            const copy = await ctx.stores.copyOf(f.store, f.side.label, cfg.databaseUrl);
            const d = await startDeployment({ name: f.side.label, checkout: f.side, store: copy, servers: 1, limits: 'off', probe: ctx.probePool }, log);
            d.resumeFrom(f.d);
            ds.push(d);
          }
          await bigPair(round, ds, `, ${short(cfg.stored)} stored`);
        } finally {
          for (const d of ds) await d.stop(log);
        }
      }
    } finally {
      for (const f of filled) await f.store.drop();
    }
  }

  process.stdout.write(`\n${abTables(pairs)}\n`);
  if (fills.length > 0) process.stdout.write(`\n${fills.map((f) => `fill ${f.system}: ${Math.round(f.eventsPerSec).toLocaleString('en-US')} events/s, ${f.serverUsPerEvent.toFixed(1)} µs/event`).join('\n')}\n`);
  return { pairs, rows, fills };
}

function figures(r: Row): AbFigures {
  return {
    eventsPerSec: r.eventsPerSec,
    usPerEvent: r.serverUsPerEvent,
    requestUsPerEvent: r.requestUsPerEvent ?? null,
    p99Ms: r.p99Ms,
    rateLimited: r.rateLimited,
    failures: r.errors + (r.non2xx - r.rateLimited) + r.refusedItems,
    heldShare: r.heldBack?.share ?? 0,
  };
}
