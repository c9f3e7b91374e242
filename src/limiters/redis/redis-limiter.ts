import { Redis } from 'ioredis';
import type { LimitResult, Limiter, WindowSpec, WindowUse } from '../port.js';

/**
 * One take() in one script, so that checking every window and adding to every
 * window cannot interleave with another server's take: Redis runs a script
 * whole. Per window there are two keys: a list of "time:cost" entries, oldest
 * at the head, and the running sum of their costs. Expired entries are popped
 * from the head, so each entry is read and removed once (amortised O(1)).
 * Time is the caller's `now`, never Redis TIME, so that the one clock the
 * service injects decides, as it does for the in-process limiter.
 *
 * KEYS: log_1, sum_1, log_2, sum_2, ...
 * ARGV: now, cost, limit_1, windowMs_1, limit_2, windowMs_2, ...
 * Reply: allowed (1|0), then per window: used, time of the oldest entry (nil when empty).
 */
const TAKE_SCRIPT = `
local now = tonumber(ARGV[1])
local cost = tonumber(ARGV[2])
local n = #KEYS / 2
local sums = {}
local allowed = 1

local function costOf(entry)
  return tonumber(string.sub(entry, string.find(entry, ':', 1, true) + 1))
end

for i = 1, n do
  local log, sumKey = KEYS[2 * i - 1], KEYS[2 * i]
  local cutoff = now - tonumber(ARGV[2 + 2 * i])
  local sum = tonumber(redis.call('GET', sumKey))
  if sum == nil then
    -- The sum can vanish without its log (eviction under maxmemory): rebuild it.
    sum = 0
    for _, entry in ipairs(redis.call('LRANGE', log, 0, -1)) do sum = sum + costOf(entry) end
  end
  while true do
    local head = redis.call('LINDEX', log, 0)
    if not head then
      -- An empty log holds nothing, whatever a stale sum says.
      sum = 0
      break
    end
    local at = tonumber(string.sub(head, 1, string.find(head, ':', 1, true) - 1))
    if at > cutoff then break end
    sum = sum - costOf(head)
    redis.call('LPOP', log)
  end
  sums[i] = sum
  if sum + cost > tonumber(ARGV[1 + 2 * i]) then allowed = 0 end
end

local entry = ARGV[1] .. ':' .. ARGV[2]
local reply = { allowed }
for i = 1, n do
  local log, sumKey = KEYS[2 * i - 1], KEYS[2 * i]
  local ttl = math.ceil(tonumber(ARGV[2 + 2 * i]))
  if allowed == 1 then
    redis.call('RPUSH', log, entry)
    sums[i] = sums[i] + cost
  end
  local head = redis.call('LINDEX', log, 0)
  if head then
    -- The newest entry leaves at most windowMs from now, so an idle window's keys may go then.
    redis.call('SET', sumKey, sums[i], 'PX', ttl)
    redis.call('PEXPIRE', log, ttl)
    reply[#reply + 1] = sums[i]
    reply[#reply + 1] = string.sub(head, 1, string.find(head, ':', 1, true) - 1)
  else
    redis.call('DEL', log, sumKey)
    reply[#reply + 1] = 0
    reply[#reply + 1] = false
  end
end
return reply
`;

/** How RedisLimiter reaches Redis and reports trouble. */
export interface RedisLimiterOptions {
  /** Prefix of every key this limiter writes; default "inlet:rl:". */
  keyPrefix?: string;
  /** Longest wait for Redis in one take(), connecting or running the script; default 300 ms. */
  timeoutMs?: number;
  /** Called once per outage, when Redis first fails to answer. */
  onError?: (err: Error) => void;
  /** Counts while Redis does not answer: the in-process limiter, with the same semantics. */
  fallback: Limiter;
}

interface TakeCommand {
  inletTake(numKeys: number, ...args: string[]): Promise<unknown[]>;
}

/**
 * Counts limits in a Redis shared by every server of a deployment, with the
 * exact semantics of the in-process limiter.
 *
 * When Redis does not answer, take() counts in this process instead, and goes
 * back to Redis by itself once it answers again. Losing customers' events, or
 * refusing all traffic, because the limiter's helper is down would be worse
 * than counting per server for a while: that is how servers without a shared
 * Redis count anyway (docs/design.md, "Limits"), so limits still hold per server. A take()
 * that timed out may still have counted in Redis as well; erring by one request
 * towards refusing is the price of never waiting longer than timeoutMs.
 */
export class RedisLimiter implements Limiter {
  private readonly client: Redis & TakeCommand;
  private readonly prefix: string;
  private readonly onError: (err: Error) => void;
  private readonly local: Limiter;
  private readonly firstContact: Promise<void>;
  private down = false;
  // While Redis is down, one take() at a time asks it again; the others count
  // locally at once rather than each waiting out the timeout of a hung server.
  private probing = false;

  constructor(url: string, opts: RedisLimiterOptions) {
    this.local = opts.fallback;
    const timeoutMs = opts.timeoutMs ?? 300;
    this.prefix = opts.keyPrefix ?? 'inlet:rl:';
    this.onError = opts.onError ?? (() => {});
    const client = new Redis(url, {
      // Every wait is bounded: a take() never queues for a Redis that is away,
      // and a take() cut off by a dropped connection is never replayed after
      // its caller already had an answer (that would count it twice).
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      autoResendUnfulfilledCommands: false,
      connectTimeout: timeoutMs,
      commandTimeout: timeoutMs,
    });
    client.defineCommand('inletTake', { lua: TAKE_SCRIPT });
    // ioredis reconnects by itself and raises 'error' on every failed attempt;
    // the first one starts an outage, and the outage is reported once.
    client.on('error', (err: Error) => this.fail(err));
    this.client = client as Redis & TakeCommand;
    this.firstContact = firstContact(client, timeoutMs);
  }

  async take(windows: WindowSpec[], cost: number, now: number): Promise<LimitResult> {
    if (windows.length === 0) return { allowed: true, windows: [] };
    const route = await this.route();
    if (route === 'local') return this.local.take(windows, cost, now);
    const keys = windows.flatMap((w) => [`${this.prefix}${w.key}:log`, `${this.prefix}${w.key}:sum`]);
    const args = [String(now), String(cost), ...windows.flatMap((w) => [String(w.limit), String(w.windowMs)])];
    try {
      const reply = await this.client.inletTake(keys.length, ...keys, ...args);
      this.down = false;
      return parseReply(reply, windows);
    } catch (err) {
      this.fail(err instanceof Error ? err : new Error(String(err)));
      return this.local.take(windows, cost, now);
    } finally {
      if (route === 'probe') this.probing = false;
    }
  }

  async close(): Promise<void> {
    await this.local.close();
    if (this.client.status === 'ready') {
      try {
        await this.client.quit();
        return;
      } catch {
        // Fall through: a connection that cannot say goodbye is simply dropped.
      }
    }
    this.client.disconnect();
  }

  /** Where this take() counts; settles within the timeout. */
  private async route(): Promise<'redis' | 'probe' | 'local'> {
    // At start-up the connection is still opening: wait for it once, so the
    // first requests of a healthy deployment are counted in Redis too.
    await this.firstContact;
    if (this.client.status !== 'ready') {
      this.fail(new Error(`Redis is ${this.client.status}`));
      return 'local';
    }
    if (!this.down) return 'redis';
    if (this.probing) return 'local';
    this.probing = true;
    return 'probe';
  }

  private fail(err: Error): void {
    if (this.down) return;
    this.down = true;
    this.onError(err);
  }
}

/** Settles when the first connection attempt has either succeeded or failed. */
function firstContact(client: Redis, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      client.off('ready', done).off('error', done).off('close', done);
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    timer.unref();
    client.once('ready', done).once('error', done).once('close', done);
  });
}

function parseReply(reply: unknown[], windows: WindowSpec[]): LimitResult {
  const uses: WindowUse[] = windows.map((w, i) => {
    const oldest = reply[2 + 2 * i] as string | null;
    return { used: Number(reply[1 + 2 * i]), oldestExpiresAt: oldest === null ? null : Number(oldest) + w.windowMs };
  });
  return { allowed: reply[0] === 1, windows: uses };
}
