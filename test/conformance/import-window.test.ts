/**
 * The import window on every limiter engine: counted apart from burst and
 * sustained, and, on Redis, shared by every server of the deployment.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, expect, it } from 'vitest';
import type { Limiter } from '../../src/limiters/port.js';
import { LocalLimiter } from '../../src/limiters/local/local-limiter.js';
import { DEFAULT_LIMITS, RateLimits } from '../../src/domain/limits/policies.js';
import { RedisLimiter } from '../../src/limiters/redis/redis-limiter.js';
import { describeWith } from '../helpers/needs-services.js';

const REDIS_URL = process.env.INLET_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const T = Date.UTC(2026, 10, 23);

const opened: Limiter[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((l) => l.close()));
});

const ENGINES: { name: string; servers: () => [Limiter, Limiter]; shared: boolean }[] = [
  { name: 'local', servers: () => [new LocalLimiter(), new LocalLimiter()], shared: false },
  {
    name: 'redis',
    servers: () => {
      const keyPrefix = `inlet:test:${randomUUID()}:`;
      const fail = (e: Error) => {
        throw e;
      };
      return [new RedisLimiter(REDIS_URL, { fallback: new LocalLimiter(), keyPrefix, onError: fail }), new RedisLimiter(REDIS_URL, { fallback: new LocalLimiter(), keyPrefix, onError: fail })];
    },
    shared: true,
  },
];

for (const engine of ENGINES.filter((e) => (process.env.INLET_TEST_LIMITERS ?? 'local,redis').split(',').includes(e.name))) {
  describeWith(engine.name === 'redis' ? ['redis'] : [], `${engine.name}: the import window`, () => {
    it('counts imports apart from burst and sustained, in a window of its own, across servers where the engine shares', async () => {
      const [a, b] = engine.servers();
      opened.push(a, b);
      const settings = { ...DEFAULT_LIMITS, import: 10 };
      const first = new RateLimits(a, settings);
      const second = new RateLimits(b, settings);
      expect(await first.checkItems('prj_1', 6, T, 'import')).toEqual({
        allowed: true,
        retryAfter: 0,
        headers: { 'RateLimit-Policy': '"import";q=10;w=60', RateLimit: '"import";r=4;t=60' },
      });
      const other = await second.checkItems('prj_1', 5, T + 1, 'import');
      expect(other.allowed).toBe(!engine.shared);
      if (engine.shared) expect(other.retryAfter).toBe(60);
      expect((await first.checkItems('prj_1', 5, T + 2)).headers.RateLimit).toBe('"burst";r=49995;t=10, "sustained";r=59995;t=60');
      expect((await first.checkItems('prj_1', 4, T + 60_000, 'import')).allowed).toBe(true);
    });
  });
}
