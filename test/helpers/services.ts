import { Redis } from 'ioredis';

/** Fails with a clear sentence when Redis does not answer a PING. */
export async function requireRedis(url: string): Promise<void> {
  const r = new Redis(url, { lazyConnect: true, connectTimeout: 3000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  r.on('error', () => {});
  try {
    await r.connect();
    await r.ping();
  } catch (e) {
    throw new Error(`Redis is not reachable at ${url} (${(e as Error).message}). Start it, or point INLET_TEST_REDIS_URL at one.`, { cause: e });
  } finally {
    r.disconnect();
  }
}
