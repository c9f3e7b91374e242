/**
 * Every setting of `inlet serve`, in one table: its environment variable, its
 * flag (if any), its default, what it accepts and what it does. config.ts
 * reads the values from it, `inlet serve --help` lists it and docs/settings.md
 * is generated from it (a test keeps them in step). Adding a setting is adding
 * one entry here.
 */
import { isIP } from 'node:net';
import { availableParallelism } from 'node:os';
import { DEFAULT_LIMITS } from './domain/limits/policies.js';
import { ADMISSION_WAIT_MS, BODY_BUDGET_BYTES } from './edge/admission.js';
import { LIVE_BUFFER_BYTES, LIVE_STREAMS, LIVE_STREAMS_PER_SESSION, MAX_CONNECTIONS } from './edge/connection-limits.js';
import { normaliseHost } from './edge/host.js';
import { MAX_BODY_BYTES } from './edge/read-body.js';
import { READING_ADDRESS_BUDGET_BYTES, READING_BUDGET_BYTES, READING_PROJECT_BUDGET_BYTES, keylessPoolFor } from './edge/read-budget.js';
import { OFF_THREAD_MIN_BYTES } from './intakes/check-threads.js';

/** A setting the server cannot start with; the message names it and what it accepts. */
export class ConfigError extends Error {}

/** One row of the table. `parse` gets the trimmed text and returns undefined for a value it refuses. */
export interface SettingSpec<T> {
  env: string;
  /** The flag of `inlet serve`, as commander spells it ("--port <n>"). */
  flag?: string;
  /** The value when unset. */
  fallback: T;
  /** The default, as help and docs show it. */
  shown: string;
  /** The values accepted, completing "must be …". */
  accepts: string;
  /** One sentence: what the setting does. */
  about: string;
  /** A secret (a URL with a password): a refusal never repeats the value. */
  secret?: boolean;
  parse: (text: string) => T | undefined;
}

const setting = <T>(s: SettingSpec<T>): SettingSpec<T> => s;

/** The log levels pino knows, quietest last. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

const whole = (max: number) => (t: string) => (/^\d+$/.test(t) && Number(t) <= max ? Number(t) : undefined);
const wholeUpTo = (max: number) => `a whole number from 0 to ${max}`;
const atLeastOne = (max: number) => (t: string) => {
  const n = whole(max)(t);
  return n === undefined || n < 1 ? undefined : n;
};

/** A host name or an IP address (IPv6 without brackets). */
const hostLike = (t: string) => (isIP(t) !== 0 || /^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*\.?$/i.test(t) ? t : undefined);

/** An IP address, or a CIDR range such as 10.0.0.0/8 or fd00::/8. */
function addressOrRange(t: string): string | undefined {
  const [addr = '', prefix, ...rest] = t.split('/');
  const family = isIP(addr);
  if (family === 0 || rest.length > 0) return undefined;
  if (prefix === undefined) return addr;
  const bits = /^\d{1,3}$/.test(prefix) ? Number(prefix) : NaN;
  return bits <= (family === 4 ? 32 : 128) ? `${addr}/${bits}` : undefined;
}

function urlWith(protocols: string[]) {
  return (t: string) => {
    if (!URL.canParse(t)) return undefined;
    const u = new URL(t);
    return protocols.includes(u.protocol) && u.hostname !== '' ? t : undefined;
  };
}

function listOf(each: (item: string) => string | undefined) {
  return (t: string) => {
    const out = new Set<string>();
    for (const part of t.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
      const v = each(part);
      if (v === undefined) return undefined;
      out.add(v);
    }
    return out;
  };
}

/** A whole number without an upper bound, where 0 turns something off. */
function amount(env: string, fallback: number, offWhat: string, about: string): SettingSpec<number> {
  const accepts = `${wholeUpTo(Number.MAX_SAFE_INTEGER)} (0 turns ${offWhat} off)`;
  return { env, fallback, shown: String(fallback), accepts, about, parse: whole(Number.MAX_SAFE_INTEGER) };
}

/** A budget of bodies being read: 0 (off) or at least one body of the largest size, which it would refuse forever. */
function readingBudget(env: string, fallback: number, about: string, noLimit = 'no limit'): SettingSpec<number> {
  const accepts = `0 (${noLimit}) or at least ${MAX_BODY_BYTES} bytes (one body of the largest size), a whole number`;
  const parse = (t: string) => {
    const n = whole(Number.MAX_SAFE_INTEGER)(t);
    return n === undefined || (n !== 0 && n < MAX_BODY_BYTES) ? undefined : n;
  };
  return { env, fallback, shown: String(fallback), accepts, about, parse };
}

export const SETTINGS = {
  port: setting({
    env: 'INLET_PORT', flag: '--port <n>', fallback: 8080, shown: '8080',
    accepts: `${wholeUpTo(65535)} (0 picks a free port)`,
    about: 'The port the API listens on.',
    parse: whole(65535),
  }),
  host: setting({
    env: 'INLET_HOST', flag: '--host <addr>', fallback: '127.0.0.1', shown: '127.0.0.1',
    accepts: 'an IP address or a host name of this machine, such as 127.0.0.1, 0.0.0.0 or ::',
    about: 'The address the API listens on; keep 127.0.0.1 behind a proxy on the same machine.',
    parse: hostLike,
  }),
  dataDir: setting({
    env: 'INLET_DATA_DIR', flag: '--data-dir <dir>', fallback: './data', shown: './data',
    accepts: 'a directory path (created if missing)',
    about: 'Where the embedded SQLite store keeps its file; unused with INLET_DATABASE_URL.',
    parse: (t) => t,
  }),
  baseUrl: setting<string | null>({
    env: 'INLET_BASE_URL', flag: '--base-url <url>', fallback: null, shown: 'http://localhost:<port>',
    accepts: 'an absolute http:// or https:// URL, such as https://inlet.example.com',
    about: 'The public URL of the service: links in errors and the reference pages start with it.',
    parse: (t) => urlWith(['http:', 'https:'])(t.replace(/\/+$/, '')),
  }),
  databaseUrl: setting<string | null>({
    env: 'INLET_DATABASE_URL', fallback: null, shown: 'unset (SQLite in the data directory)',
    accepts: 'a postgres:// or postgresql:// URL, or unset for the embedded store',
    about: 'The PostgreSQL database every server of a deployment shares.',
    secret: true,
    parse: urlWith(['postgres:', 'postgresql:']),
  }),
  redisUrl: setting<string | null>({
    env: 'INLET_REDIS_URL', fallback: null, shown: 'unset (limits counted in this process)',
    accepts: 'a redis:// or rediss:// URL, or unset',
    about: 'The Redis that servers share to count rate limits together.',
    secret: true,
    parse: urlWith(['redis:', 'rediss:']),
  }),
  redisTimeoutMs: setting({
    env: 'INLET_REDIS_TIMEOUT_MS', fallback: 300, shown: '300',
    accepts: 'a whole number from 1 to 5000',
    // Per call to Redis, and a request makes up to two (and, first after the
    // start, waits for the connection once): at 5 s the three stay well inside
    // a request's 30 s, so a hung Redis never times a request out.
    about: 'Milliseconds each rate limit check waits for Redis (connecting or counting) before this server counts alone until Redis answers again.',
    parse: atLeastOne(5_000),
  }),
  trackerHosts: setting({
    env: 'INLET_TRACKER_HOSTS', fallback: new Set<string>(), shown: 'empty',
    accepts: 'host names separated by commas, such as t.example.com',
    about: 'Custom tracker domains: they serve browser traffic, so the API refuses requests to them.',
    // Spelled as a request's Host may be (case, port, brackets, trailing dot), compared as normaliseHost makes it.
    parse: listOf((h) => (h.includes('/') ? undefined : hostLike(normaliseHost(h)))),
  }),
  trustedProxies: setting({
    env: 'INLET_TRUSTED_PROXIES', fallback: new Set<string>(), shown: 'empty (X-Forwarded-For is ignored)',
    accepts: 'IP addresses or CIDR ranges separated by commas, such as 127.0.0.1 or 10.0.0.0/8',
    about: "Proxies whose X-Forwarded-For names the client: sign-in throttling and a body's read share then count per client, not per proxy.",
    parse: listOf(addressOrRange),
  }),
  retiredVersions: setting({
    env: 'INLET_RETIRED_API_VERSIONS', fallback: new Set<string>(), shown: 'empty',
    accepts: 'API major versions separated by commas, such as v0',
    about: 'API versions answered as retired (410) instead of not found.',
    parse: listOf((v) => (/^v?\d+$/i.test(v) ? v.replace(/^v/i, '') : undefined)),
  }),
  limitBurst: amount('INLET_LIMIT_BURST', DEFAULT_LIMITS.burst, 'the limit', 'Items a project may send within 10 seconds.'),
  limitSustained: amount('INLET_LIMIT_SUSTAINED', DEFAULT_LIMITS.sustained, 'the limit', 'Items a project may send within 60 seconds.'),
  limitKeyRps: amount('INLET_LIMIT_KEY_RPS', DEFAULT_LIMITS.keyRps, 'the limit', 'Requests one key may send per second.'),
  limitImport: amount('INLET_LIMIT_IMPORT', DEFAULT_LIMITS.import, 'the limit', 'Items a project may send to /api/v1/import within 60 seconds, apart from the two above.'),
  bodyBudgetBytes: amount('INLET_BODY_BUDGET_BYTES', BODY_BUDGET_BYTES, 'back-pressure', 'Bytes of request bodies a server works on at once; more wait for room.'),
  bodyWaitMs: setting({
    env: 'INLET_BODY_WAIT_MS', fallback: ADMISSION_WAIT_MS, shown: String(ADMISSION_WAIT_MS),
    // Under the 25 s a stopping server gives requests in flight, so that one
    // still waiting for room at SIGTERM gets its 503 rather than a cut connection.
    accepts: wholeUpTo(20_000),
    about: 'Milliseconds a body may wait for room before it is answered 503.',
    parse: whole(20_000),
  }),
  readingBudgetBytes: readingBudget(
    'INLET_READING_BUDGET_BYTES', READING_BUDGET_BYTES,
    'Bytes of request bodies being read at once, all connections together; a request past it is answered 503 before its body is read.',
  ),
  // Named for keys, as it was when the share was one key's; kept so that a
  // deployment that sets it keeps its bound, now counted per project.
  readingKeyBudgetBytes: readingBudget(
    'INLET_READING_KEY_BUDGET_BYTES', READING_PROJECT_BUDGET_BYTES,
    "One project's share of the bytes being read, all its keys together, so that one sender cannot hold them all however many keys it makes; at most INLET_READING_BUDGET_BYTES.",
  ),
  // Unset, it follows INLET_READING_BUDGET_BYTES (config.ts works it out).
  readingKeylessBudgetBytes: {
    ...readingBudget(
      'INLET_READING_KEYLESS_BUDGET_BYTES', 0,
      'The part of the bytes being read kept for bodies whose key is inside them (Segment\'s writeKey), shared by all of them and by them only, so that clients without a key in a header cannot hold up the others.',
      'no pool: such bodies share the whole budget',
    ),
    fallback: null as number | null,
    shown: `an eighth of INLET_READING_BUDGET_BYTES, at least ${MAX_BODY_BYTES} (${keylessPoolFor(READING_BUDGET_BYTES)} by default)`,
  },
  readingAddressBudgetBytes: readingBudget(
    'INLET_READING_ADDRESS_BUDGET_BYTES', READING_ADDRESS_BUDGET_BYTES,
    "One client address's share of INLET_READING_KEYLESS_BUDGET_BYTES, so that a few addresses cannot hold it all; at most that pool.",
  ),
  maxConnections: setting({
    env: 'INLET_MAX_CONNECTIONS', fallback: MAX_CONNECTIONS, shown: String(MAX_CONNECTIONS),
    accepts: `${wholeUpTo(1_000_000)} (0: no cap)`,
    about: "Open connections at most, the console's live views apart (INLET_LIVE_STREAMS); past it new connections are closed at once, which clients retry as a network error.",
    parse: whole(1_000_000),
  }),
  liveStreams: setting({
    env: 'INLET_LIVE_STREAMS', fallback: LIVE_STREAMS, shown: String(LIVE_STREAMS),
    accepts: 'a whole number from 1 to 10000',
    about: `The console's live views open at once on this server, on top of INLET_MAX_CONNECTIONS; past it a view is answered 429. Each holds at most ${LIVE_BUFFER_BYTES / 1_048_576} MiB unsent before it is dropped.`,
    parse: atLeastOne(10_000),
  }),
  liveStreamsPerSession: setting({
    env: 'INLET_LIVE_STREAMS_PER_SESSION', fallback: LIVE_STREAMS_PER_SESSION, shown: String(LIVE_STREAMS_PER_SESSION),
    accepts: 'a whole number from 1 to 10000',
    about: "The live views one console session may have open on this server (one per tab); past it a view is answered 429.",
    parse: atLeastOne(10_000),
  }),
  checkThreads: setting({
    env: 'INLET_CHECK_THREADS', fallback: availableParallelism() > 1 ? 1 : 0, shown: '1 (0 with one CPU)',
    accepts: `${wholeUpTo(64)} (0: none)`,
    about: `Threads that parse and check request bodies of ${OFF_THREAD_MIN_BYTES / 1024} KiB and more, so the main thread only writes and answers; with 0 the main thread does it all, but for bodies with their key inside (Segment's writeKey, PostHog's api_key), which are always read on a thread: one is started for them. Each takes about 20 MiB of memory.`,
    parse: whole(64),
  }),
  logLevel: setting({
    env: 'INLET_LOG_LEVEL', fallback: 'info' as string, shown: 'info',
    accepts: `one of ${LOG_LEVELS.join(', ')}`,
    about: 'The least important log lines written to stderr (one JSON line per request at info).',
    parse: (t) => ((LOG_LEVELS as readonly string[]).includes(t) ? t : undefined),
  }),
  metricsPort: setting({
    env: 'INLET_METRICS_PORT', flag: '--metrics-port <n>', fallback: 9464, shown: '9464',
    accepts: `${wholeUpTo(65535)} (0 turns the metrics listener off)`,
    about: 'The port of the Prometheus metrics listener (GET /metrics), never the public port.',
    parse: whole(65535),
  }),
  metricsHost: setting({
    env: 'INLET_METRICS_HOST', fallback: '127.0.0.1', shown: '127.0.0.1',
    accepts: 'an IP address or a host name of this machine',
    about: 'The address the metrics listener binds to; keep it off the public network.',
    parse: hostLike,
  }),
  destinationLeaseMs: setting({
    env: 'INLET_DESTINATION_LEASE_MS', fallback: 15_000, shown: '15000',
    accepts: 'a whole number from 300 to 60000',
    about: 'How long a server holds a destination it delivers without renewing it: another server takes over within this and a third of it when the server dies.',
    parse: (t: string) => {
      const n = whole(60_000)(t);
      return n === undefined || n < 300 ? undefined : n;
    },
  }),
  destinationsAllowPrivate: setting({
    env: 'INLET_DESTINATIONS_ALLOW_PRIVATE', fallback: false, shown: 'false',
    accepts: 'true or false',
    about: "Whether destinations may reach loopback, link-local, private and reserved addresses and this server's own (cloud metadata addresses included); off, such hosts are refused at creation and at each connection (docs/destinations.md).",
    parse: (t: string) => (t === 'true' ? true : t === 'false' ? false : undefined),
  }),
  stopDrainMs: setting({
    env: 'INLET_STOP_DRAIN_MS', fallback: 0, shown: '0',
    accepts: wholeUpTo(60_000),
    about: 'On SIGTERM, milliseconds /readyz answers 503 while requests are still served, so a load balancer stops sending first.',
    parse: whole(60_000),
  }),
};

/** The value of every setting, by its key in SETTINGS. */
export type Settings = { [K in keyof typeof SETTINGS]: (typeof SETTINGS)[K]['fallback'] };

type Env = Record<string, string | undefined>;

/** How a setting is named in messages: its flag, if any, and its variable. */
export function settingName(s: SettingSpec<unknown>): string {
  return s.flag === undefined ? s.env : `${s.flag.split(' ')[0]} / ${s.env}`;
}

/** Reads every setting; a flag wins over its variable, and an empty value is unset. Throws ConfigError. */
export function readSettings(env: Env, flags: Record<string, string | undefined> = {}): Settings {
  const out: Record<string, unknown> = {};
  for (const [key, s] of Object.entries(SETTINGS) as [string, SettingSpec<unknown>][]) {
    const given = (Object.hasOwn(flags, key) ? flags[key] : undefined) ?? env[s.env];
    const text = given?.trim() ?? '';
    if (text === '') {
      out[key] = s.fallback;
      continue;
    }
    const value = s.parse(text);
    if (value === undefined) {
      throw new ConfigError(`${settingName(s)} must be ${s.accepts}, not ${s.secret ? 'the value given' : `"${text}"`}.`);
    }
    out[key] = value;
  }
  return out as Settings;
}
