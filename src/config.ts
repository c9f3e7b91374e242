import { DEFAULT_LIMITS, type LimitSettings } from './domain/limits/policies.js';
import { ADMISSION_WAIT_MS, BODY_BUDGET_BYTES } from './edge/admission.js';

/** Everything an operator can set, from flags and INLET_* variables. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** Where the reference pages are linked from in every error; null: http://localhost:<bound port>. */
  baseUrl: string | null;
  databaseUrl: string | null;
  redisUrl: string | null;
  /** Custom tracker domains: they serve browser traffic, never the API. */
  trackerHosts: Set<string>;
  /** Retired API majors, such as "0". */
  retiredVersions: Set<string>;
  limits: LimitSettings;
  /** Back-pressure on request bodies (edge/admission.ts); a budget of Infinity turns it off. */
  admission: { budgetBytes: number; waitMs: number };
  logLevel: string;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

/** Reads the shared settings; `flags` wins over the environment. */
export function loadConfig(env: Env, flags: { port?: string; host?: string; dataDir?: string; baseUrl?: string } = {}): Config {
  const port = wholeNumber(flags.port ?? env.INLET_PORT ?? '8080', '--port / INLET_PORT', 65535);
  const host = flags.host ?? env.INLET_HOST ?? '127.0.0.1';
  const given = flags.baseUrl ?? nonEmpty(env.INLET_BASE_URL);
  const baseUrl = given === null ? null : given.replace(/\/+$/, '');
  if (baseUrl !== null && !URL.canParse(baseUrl)) {
    throw new ConfigError(`--base-url / INLET_BASE_URL "${baseUrl}" is not an absolute URL; give one such as https://inlet.example.com.`);
  }
  const databaseUrl = nonEmpty(env.INLET_DATABASE_URL);
  if (databaseUrl !== null && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('INLET_DATABASE_URL must start with postgres:// or postgresql://; leave it unset for the embedded store.');
  }
  return {
    port,
    host,
    dataDir: flags.dataDir ?? nonEmpty(env.INLET_DATA_DIR) ?? './data',
    baseUrl,
    databaseUrl,
    redisUrl: nonEmpty(env.INLET_REDIS_URL),
    trackerHosts: list(env.INLET_TRACKER_HOSTS, (h) => h.toLowerCase()),
    retiredVersions: list(env.INLET_RETIRED_API_VERSIONS, (v) => v.replace(/^v/i, '')),
    limits: {
      burst: wholeNumber(env.INLET_LIMIT_BURST ?? String(DEFAULT_LIMITS.burst), 'INLET_LIMIT_BURST'),
      sustained: wholeNumber(env.INLET_LIMIT_SUSTAINED ?? String(DEFAULT_LIMITS.sustained), 'INLET_LIMIT_SUSTAINED'),
      keyRps: wholeNumber(env.INLET_LIMIT_KEY_RPS ?? String(DEFAULT_LIMITS.keyRps), 'INLET_LIMIT_KEY_RPS'),
      import: wholeNumber(env.INLET_LIMIT_IMPORT ?? String(DEFAULT_LIMITS.import), 'INLET_LIMIT_IMPORT'),
    },
    admission: {
      budgetBytes: wholeNumber(env.INLET_BODY_BUDGET_BYTES ?? String(BODY_BUDGET_BYTES), 'INLET_BODY_BUDGET_BYTES') || Infinity,
      // Under the 25 s a stopping server gives requests in flight, so that one
      // still waiting for room at SIGTERM gets its 503 rather than a cut connection.
      waitMs: wholeNumber(env.INLET_BODY_WAIT_MS ?? String(ADMISSION_WAIT_MS), 'INLET_BODY_WAIT_MS', 20_000),
    },
    logLevel: env.INLET_LOG_LEVEL ?? 'info',
  };
}

function nonEmpty(v: string | undefined): string | null {
  return v === undefined || v.trim() === '' ? null : v.trim();
}

function list(v: string | undefined, norm: (s: string) => string): Set<string> {
  return new Set((v ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '').map(norm));
}

function wholeNumber(v: string, name: string, max = Number.MAX_SAFE_INTEGER): number {
  if (!/^\d+$/.test(v.trim()) || Number(v) > max) {
    throw new ConfigError(`${name} must be a whole number from 0 to ${max}, not "${v}".`);
  }
  return Number(v);
}
