import type { LimitSettings } from './domain/limits/policies.js';
import { ConfigError, type Settings, readSettings } from './settings.js';

export { ConfigError };

/** Everything an operator can set (src/settings.ts), with the groups the server's parts take. */
export type Config = Settings & {
  limits: LimitSettings;
  /** Back-pressure on request bodies (edge/admission.ts); a budget of Infinity turns it off. */
  admission: { budgetBytes: number; waitMs: number };
};

type Env = Record<string, string | undefined>;

/** Reads and checks every setting; `flags` wins over the environment. Throws ConfigError naming the setting. */
export function loadConfig(env: Env, flags: Record<string, string | undefined> = {}): Config {
  const s = readSettings(env, flags);
  return {
    ...s,
    limits: { burst: s.limitBurst, sustained: s.limitSustained, keyRps: s.limitKeyRps, import: s.limitImport },
    admission: { budgetBytes: s.bodyBudgetBytes || Infinity, waitMs: s.bodyWaitMs },
  };
}
