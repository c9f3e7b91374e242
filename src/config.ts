import type { LimitSettings } from './domain/limits/policies.js';
import { ConfigError, SETTINGS, type Settings, readSettings, settingName } from './settings.js';

export { ConfigError };

/** Everything an operator can set (src/settings.ts), with the groups the server's parts take. */
export type Config = Settings & {
  limits: LimitSettings;
  /** Back-pressure on request bodies (edge/admission.ts); a budget of Infinity turns it off. */
  admission: { budgetBytes: number; waitMs: number };
  /** Bounds on bodies being read (edge/read-budget.ts), all connections and per key; Infinity turns one off. */
  reading: { budgetBytes: number; keyBudgetBytes: number };
};

type Env = Record<string, string | undefined>;

/** Reads and checks every setting; `flags` wins over the environment. Throws ConfigError naming the setting. */
export function loadConfig(env: Env, flags: Record<string, string | undefined> = {}): Config {
  const s = readSettings(env, flags);
  const reading = { budgetBytes: s.readingBudgetBytes || Infinity, keyBudgetBytes: s.readingKeyBudgetBytes || Infinity };
  // A key's share is part of the whole: a larger share would never be reached.
  if (Number.isFinite(reading.keyBudgetBytes) && reading.keyBudgetBytes > reading.budgetBytes) {
    throw new ConfigError(
      `${settingName(SETTINGS.readingKeyBudgetBytes)} (${s.readingKeyBudgetBytes}) must not be over ${settingName(SETTINGS.readingBudgetBytes)} (${s.readingBudgetBytes}): a key's share is part of the whole.`,
    );
  }
  return {
    ...s,
    limits: { burst: s.limitBurst, sustained: s.limitSustained, keyRps: s.limitKeyRps, import: s.limitImport },
    admission: { budgetBytes: s.bodyBudgetBytes || Infinity, waitMs: s.bodyWaitMs },
    reading,
  };
}
