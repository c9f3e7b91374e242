/**
 * PostgreSQL and Redis for the tests that need them: where they are, how to
 * probe them and how to start them. Outside CI, a suite that needs a service
 * nobody runs here is skipped (needs-services.ts), and the run ends with one
 * line that names the skipped suites and says how to start the service
 * (services-setup.ts probes, skipped-reporter.ts prints). With CI set, nothing
 * is skipped: a missing service fails the run.
 */
import pg from 'pg';
import { Redis } from 'ioredis';

/** A service some tests need. */
export type Service = 'postgres' | 'redis';

/** A service that did not answer, and why. */
export interface MissingService {
  service: Service;
  url: string;
  problem: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    missingServices: MissingService[];
  }
}

/** Where the PostgreSQL suites make their throwaway databases. */
export const TEST_DATABASE_URL = process.env.INLET_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** The Redis the limiter and multi-server suites count in. */
export const TEST_REDIS_URL = process.env.INLET_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** How each service is named, pointed at and started, for the skip line. */
export const SERVICES: Record<Service, { title: string; setting: string; start: string }> = {
  postgres: {
    title: 'PostgreSQL',
    setting: 'INLET_TEST_DATABASE_URL',
    start: '"sudo service postgresql start", or "docker run -d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust postgres:15"',
  },
  redis: {
    title: 'Redis',
    setting: 'INLET_TEST_REDIS_URL',
    start: '"redis-server --daemonize yes", or "docker run -d -p 6379:6379 redis:7"',
  },
};

/** Marks the name of a suite skipped for a missing service, so the reporter can find it. */
export const NEEDS_MARK = '[needs ';

/** Why PostgreSQL at `url` cannot be used, or null when it answers. */
export async function postgresProblem(url: string): Promise<string | null> {
  const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  c.on('error', () => {});
  try {
    await c.connect();
    await c.query('SELECT 1');
    return null;
  } catch (e) {
    return (e as Error).message || (e as Error).name;
  } finally {
    await c.end().catch(() => {});
  }
}

/** Why Redis at `url` cannot be used, or null when it answers a PING. */
export async function redisProblem(url: string): Promise<string | null> {
  const r = new Redis(url, { lazyConnect: true, connectTimeout: 3000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  let cause: Error | null = null;
  r.on('error', (e: Error) => (cause ??= e));
  try {
    await r.connect();
    await r.ping();
    return null;
  } catch (e) {
    return (cause ?? (e as Error)).message;
  } finally {
    r.disconnect();
  }
}

/** Fails with a clear sentence when Redis does not answer a PING. */
export async function requireRedis(url: string): Promise<void> {
  const problem = await redisProblem(url);
  if (problem !== null) throw new Error(`Redis is not reachable at ${url} (${problem}). Start it, or point INLET_TEST_REDIS_URL at one.`);
}
