import { LocalLimiter } from './local/local-limiter.js';
import type { Limiter } from './port.js';
import { RedisLimiter, type RedisLimiterOptions } from './redis/redis-limiter.js';

/** The limiter for a deployment: shared through Redis when a URL is given, in this process otherwise. */
export function openLimiter(redisUrl: string | null, opts: Omit<RedisLimiterOptions, 'fallback'> = {}): Limiter {
  if (redisUrl === null) return new LocalLimiter();
  // An operator must hear that servers count alone, even when the caller gave no logger.
  const onError =
    opts.onError ??
    ((err: Error) => process.stderr.write(`inlet: Redis unavailable for rate limits, counting per server until it answers: ${err.message}\n`));
  return new RedisLimiter(redisUrl, { ...opts, onError, fallback: new LocalLimiter() });
}
