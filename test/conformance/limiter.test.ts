import { randomUUID } from 'node:crypto';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Limiter, WindowSpec } from '../../src/limiters/port.js';
import { LocalLimiter } from '../../src/limiters/local/local-limiter.js';
import { RedisLimiter } from '../../src/limiters/redis/redis-limiter.js';
import { describeWith } from '../helpers/needs-services.js';
import { TEST_REDIS_URL } from '../helpers/services.js';

// Every limiter engine must pass this one suite. A new engine is one entry in
// ENGINES; INLET_TEST_LIMITERS=local (or redis) runs just that one.
const REDIS_URL = TEST_REDIS_URL;
const LIMITERS = (process.env.INLET_TEST_LIMITERS ?? 'local,redis')
  .split(',')
  .map((s) => s.trim())
  .filter((s) => s !== '');

interface Engine {
  /** A fresh limiter over counters no other test touches. */
  open(): Limiter;
  /** Errors the engine reported during the test; a conformance test must see none. */
  errors: Error[];
  cleanup(): Promise<void>;
}

function localEngine(): Engine {
  const limiters: Limiter[] = [];
  return {
    errors: [],
    open: () => {
      const l = new LocalLimiter();
      limiters.push(l);
      return l;
    },
    cleanup: async () => {
      await Promise.all(limiters.map((l) => l.close()));
    },
  };
}

function redisEngine(): Engine {
  // A random prefix per test keeps parallel runs, and reruns, apart.
  const keyPrefix = `inlet:test:${randomUUID()}:`;
  const limiters: Limiter[] = [];
  const errors: Error[] = [];
  return {
    errors,
    open: () => {
      // A fallback to local counting would pass these tests without Redis: record it, and fail.
      const l = new RedisLimiter(REDIS_URL, { fallback: new LocalLimiter(), keyPrefix, onError: (e) => errors.push(e) });
      limiters.push(l);
      return l;
    },
    cleanup: async () => {
      await Promise.all(limiters.map((l) => l.close()));
      await deleteKeys(keyPrefix);
    },
  };
}

async function deleteKeys(keyPrefix: string): Promise<void> {
  const admin = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await admin.connect();
    const keys = await admin.keys(`${keyPrefix}*`);
    if (keys.length > 0) await admin.del(...keys);
  } finally {
    admin.disconnect();
  }
}

const ENGINES: Record<string, () => Engine> = { local: localEngine, redis: redisEngine };


// An epoch-ms clock, so Redis sees times as large as real ones.
const T = Date.UTC(2026, 0, 1);

const burst = (key = 'burst:prj_1'): WindowSpec => ({ key, limit: 50_000, windowMs: 10_000 });
const sustained = (key = 'sustained:prj_1'): WindowSpec => ({ key, limit: 60_000, windowMs: 60_000 });

for (const engine of LIMITERS) {
  const make = ENGINES[engine];
  if (make === undefined) throw new Error(`INLET_TEST_LIMITERS names an unknown engine: ${engine}`);

  describeWith(engine === 'redis' ? ['redis'] : [], `limiter: ${engine}`, () => {
    let env: Engine;
    let limiter: Limiter;

    beforeEach(() => {
      env = make();
      limiter = env.open();
    });

    afterEach(async () => {
      await env.cleanup();
      expect(env.errors).toEqual([]);
    });

    it('admits the last item that fits and refuses the first that does not', async () => {
      const w = [burst()];
      expect(await limiter.take(w, 49_999, T)).toEqual({ allowed: true, windows: [{ used: 49_999, oldestExpiresAt: T + 10_000 }] });
      expect(await limiter.take(w, 1, T + 1)).toEqual({ allowed: true, windows: [{ used: 50_000, oldestExpiresAt: T + 10_000 }] });
      expect(await limiter.take(w, 1, T + 2)).toEqual({ allowed: false, windows: [{ used: 50_000, oldestExpiresAt: T + 10_000 }] });
    });

    it('adds nothing for a refused take, so a smaller one still fits', async () => {
      const w = [{ key: 'k', limit: 100, windowMs: 10_000 }];
      expect((await limiter.take(w, 60, T)).allowed).toBe(true);
      const refused = await limiter.take(w, 50, T + 1);
      expect(refused).toEqual({ allowed: false, windows: [{ used: 60, oldestExpiresAt: T + 10_000 }] });
      expect(await limiter.take(w, 40, T + 2)).toEqual({ allowed: true, windows: [{ used: 100, oldestExpiresAt: T + 10_000 }] });
    });

    it('refuses a take that fits burst but not sustained, and grows neither window', async () => {
      const w = [burst(), sustained()];
      expect((await limiter.take(w, 40_000, T)).allowed).toBe(true);
      // Ten seconds on, the burst window is empty but sustained still holds 40,000.
      const refused = await limiter.take(w, 30_000, T + 10_000);
      expect(refused).toEqual({
        allowed: false,
        windows: [
          { used: 0, oldestExpiresAt: null },
          { used: 40_000, oldestExpiresAt: T + 60_000 },
        ],
      });
      expect(await limiter.take(w, 20_000, T + 10_000)).toEqual({
        allowed: true,
        windows: [
          { used: 20_000, oldestExpiresAt: T + 20_000 },
          { used: 60_000, oldestExpiresAt: T + 60_000 },
        ],
      });
    });

    it('refuses a take that fits sustained but not burst, and grows neither window', async () => {
      const w = [burst(), sustained()];
      expect((await limiter.take(w, 45_000, T)).allowed).toBe(true);
      expect(await limiter.take(w, 5_001, T + 1)).toEqual({
        allowed: false,
        windows: [
          { used: 45_000, oldestExpiresAt: T + 10_000 },
          { used: 45_000, oldestExpiresAt: T + 60_000 },
        ],
      });
      expect((await limiter.take(w, 5_000, T + 2)).windows.map((u) => u.used)).toEqual([50_000, 50_000]);
    });

    it('keeps a count until exactly windowMs after it entered', async () => {
      const w = [{ key: 'k', limit: 10, windowMs: 1_000 }];
      expect((await limiter.take(w, 10, T)).allowed).toBe(true);
      expect(await limiter.take(w, 1, T + 999)).toEqual({ allowed: false, windows: [{ used: 10, oldestExpiresAt: T + 1_000 }] });
      expect(await limiter.take(w, 10, T + 1_000)).toEqual({ allowed: true, windows: [{ used: 10, oldestExpiresAt: T + 2_000 }] });
    });

    it('slides entry by entry when counts entered at different times', async () => {
      const w = [{ key: 'k', limit: 100, windowMs: 10_000 }];
      await limiter.take(w, 30, T);
      await limiter.take(w, 30, T + 3_000);
      expect(await limiter.take(w, 30, T + 6_000)).toEqual({ allowed: true, windows: [{ used: 90, oldestExpiresAt: T + 10_000 }] });
      expect(await limiter.take(w, 20, T + 9_999)).toEqual({ allowed: false, windows: [{ used: 90, oldestExpiresAt: T + 10_000 }] });
      // The first 30 leave at T+10,000; the ones of T+3,000 stay until T+13,000.
      expect(await limiter.take(w, 20, T + 10_000)).toEqual({ allowed: true, windows: [{ used: 80, oldestExpiresAt: T + 13_000 }] });
      expect(await limiter.take(w, 30, T + 12_999)).toEqual({ allowed: false, windows: [{ used: 80, oldestExpiresAt: T + 13_000 }] });
      expect(await limiter.take(w, 30, T + 13_000)).toEqual({ allowed: true, windows: [{ used: 80, oldestExpiresAt: T + 16_000 }] });
      // Long after everything left, the window is empty again.
      expect(await limiter.take(w, 100, T + 60_000)).toEqual({ allowed: true, windows: [{ used: 100, oldestExpiresAt: T + 70_000 }] });
    });

    it('reports when the oldest entry of each window leaves, and null for an empty window', async () => {
      const w = [burst(), sustained()];
      expect(await limiter.take(w, 70_000, T)).toEqual({
        allowed: false,
        windows: [
          { used: 0, oldestExpiresAt: null },
          { used: 0, oldestExpiresAt: null },
        ],
      });
      await limiter.take(w, 1, T + 500);
      expect(await limiter.take(w, 1, T + 20_000)).toEqual({
        allowed: true,
        windows: [
          { used: 1, oldestExpiresAt: T + 30_000 },
          { used: 2, oldestExpiresAt: T + 60_500 },
        ],
      });
    });

    it('keeps keys apart', async () => {
      const a = [{ key: 'burst:prj_a', limit: 10, windowMs: 10_000 }];
      const b = [{ key: 'burst:prj_b', limit: 10, windowMs: 10_000 }];
      expect((await limiter.take(a, 10, T)).allowed).toBe(true);
      expect((await limiter.take(a, 1, T)).allowed).toBe(false);
      expect(await limiter.take(b, 10, T)).toEqual({ allowed: true, windows: [{ used: 10, oldestExpiresAt: T + 10_000 }] });
    });

    it('always refuses a cost larger than the limit', async () => {
      const w = [{ key: 'k', limit: 10, windowMs: 10_000 }];
      expect(await limiter.take(w, 11, T)).toEqual({ allowed: false, windows: [{ used: 0, oldestExpiresAt: null }] });
      expect(await limiter.take(w, 11, T + 3_600_000)).toEqual({ allowed: false, windows: [{ used: 0, oldestExpiresAt: null }] });
    });

    it('admits exactly as many concurrent takes as fit', async () => {
      const w = [{ key: 'k', limit: 1_000, windowMs: 10_000 }];
      const results = await Promise.all(Array.from({ length: 50 }, () => limiter.take(w, 100, T)));
      expect(results.filter((r) => r.allowed)).toHaveLength(10);
      expect((await limiter.take(w, 0, T)).windows[0]!.used).toBe(1_000);
    });

    if (engine === 'redis') {
      it('counts together across servers that share a Redis', async () => {
        const servers = Array.from({ length: 5 }, () => env.open());
        const w = [burst(), sustained()];
        const takes = servers.flatMap((s) => Array.from({ length: 20 }, () => s.take(w, 1_000, T)));
        const results = await Promise.all(takes);
        expect(results.filter((r) => r.allowed)).toHaveLength(50);
        expect((await servers[0]!.take(w, 0, T)).windows.map((u) => u.used)).toEqual([50_000, 50_000]);
      });
    }
  });
}

describe('limiter: redis when Redis is away', () => {
  // A refused connection is an outage known at once: with a timeout longer
  // than the test's own, a take that waited for Redis instead fails the test.
  it('counts in this process at once, without waiting out the timeout, still refusing, and reports once', { timeout: 10_000 }, async () => {
    const errors: Error[] = [];
    // Nothing listens on this port.
    const limiter = new RedisLimiter('redis://127.0.0.1:6390', { fallback: new LocalLimiter(), timeoutMs: 120_000, onError: (e) => errors.push(e) });
    try {
      const w = [{ key: 'k', limit: 10, windowMs: 10_000 }];
      expect(await limiter.take(w, 10, T)).toEqual({ allowed: true, windows: [{ used: 10, oldestExpiresAt: T + 10_000 }] });
      expect((await limiter.take(w, 1, T + 1)).allowed).toBe(false);
      expect((await limiter.take(w, 10, T + 10_000)).allowed).toBe(true);
      expect(errors).toHaveLength(1);
    } finally {
      await limiter.close();
    }
  });
});

/** A TCP relay to Redis that a test can cut and restore, standing in for a network outage. */
class Relay {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  port = 0;
  /** While true, requests reach nobody and no reply comes: a hung server, not a closed one. */
  hung = false;

  constructor(private readonly target: URL) {}

  async start(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(Number(this.target.port || 6379), this.target.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => {});
      }
      client.on('data', (chunk) => {
        if (!this.hung) upstream.write(chunk);
      });
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    const addr = server.address();
    this.port = typeof addr === 'object' && addr !== null ? addr.port : 0;
    this.server = server;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    const server = this.server;
    this.server = null;
    if (server !== null) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

(LIMITERS.includes('redis') ? describeWith.bind(null, ['redis']) : describe.skip)('limiter: redis through an outage', () => {
  it('falls back while Redis is cut off and goes back to Redis by itself', async () => {
    const keyPrefix = `inlet:test:${randomUUID()}:`;
    const relay = new Relay(new URL(REDIS_URL));
    await relay.start();
    const errors: Error[] = [];
    const limiter = new RedisLimiter(`redis://127.0.0.1:${relay.port}`, { fallback: new LocalLimiter(), keyPrefix, onError: (e) => errors.push(e) });
    const direct = new RedisLimiter(REDIS_URL, { fallback: new LocalLimiter(), keyPrefix });
    const w = [{ key: 'k', limit: 100, windowMs: 60_000 }];
    try {
      expect((await limiter.take(w, 20, T)).windows[0]!.used).toBe(20);

      await relay.stop();
      // Counted here only: Redis still holds 20.
      expect((await limiter.take(w, 5, T + 1)).windows[0]!.used).toBe(5);
      expect((await limiter.take(w, 5, T + 2)).windows[0]!.used).toBe(10);
      expect(errors).toHaveLength(1);
      expect((await direct.take(w, 0, T + 3)).windows[0]!.used).toBe(20);

      await relay.start();
      // ioredis reconnects on its own schedule; meanwhile takes keep counting
      // locally (10), so 20 can only come from Redis.
      await vi.waitFor(async () => expect((await limiter.take(w, 0, T + 4)).windows[0]!.used).toBe(20), { timeout: 10_000, interval: 50 });
      expect((await limiter.take(w, 1, T + 5)).windows[0]!.used).toBe(21);
      expect((await direct.take(w, 0, T + 6)).windows[0]!.used).toBe(21);
      expect(errors).toHaveLength(1);
    } finally {
      await limiter.close();
      await direct.close();
      await relay.stop();
      await deleteKeys(keyPrefix);
    }
  });
});

(LIMITERS.includes('redis') ? describeWith.bind(null, ['redis']) : describe.skip)('limiter: redis when Redis hangs', () => {
  it('answers within the timeout by counting locally, and lets other takes go on meanwhile', async () => {
    const keyPrefix = `inlet:test:${randomUUID()}:`;
    const relay = new Relay(new URL(REDIS_URL));
    await relay.start();
    const errors: Error[] = [];
    const limiter = new RedisLimiter(`redis://127.0.0.1:${relay.port}`, { fallback: new LocalLimiter(), keyPrefix, timeoutMs: 200, onError: (e) => errors.push(e) });
    const w = [{ key: 'k', limit: 100, windowMs: 60_000 }];
    try {
      expect((await limiter.take(w, 20, T)).windows[0]!.used).toBe(20);
      relay.hung = true;
      // Redis never answers now: a take that waited for it would never settle.
      expect((await limiter.take(w, 5, T + 1)).windows[0]!.used).toBe(5);
      expect(errors).toHaveLength(1);
      // One take asks Redis again; the one beside it does not wait for its answer.
      const answered: string[] = [];
      const probe = limiter.take(w, 1, T + 2).then((r) => (answered.push('probe'), r));
      const beside = limiter.take(w, 1, T + 2).then((r) => (answered.push('beside'), r));
      expect((await beside).windows[0]!.used).toBe(6);
      expect((await probe).windows[0]!.used).toBe(7);
      expect(answered).toEqual(['beside', 'probe']);
      expect(errors).toHaveLength(1);
    } finally {
      await limiter.close();
      await relay.stop();
      await deleteKeys(keyPrefix);
    }
  });
});
