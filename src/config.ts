import type { LimitSettings } from './domain/limits/policies.js';
import { MAX_BODY_BYTES } from './edge/read-body.js';
import { keylessPoolFor } from './edge/read-budget.js';
import { ConfigError, SETTINGS, type Settings, readSettings, settingName } from './settings.js';

export { ConfigError };

/** Everything an operator can set (src/settings.ts), with the groups the server's parts take. */
export type Config = Settings & {
  limits: LimitSettings;
  /** Back-pressure on request bodies (edge/admission.ts); a budget of Infinity turns it off. */
  admission: { budgetBytes: number; waitMs: number };
  /**
   * Bounds on bodies being read (edge/read-budget.ts): all connections, per
   * key, the keyless pool and per client address within it; Infinity turns one off.
   */
  reading: { budgetBytes: number; keyBudgetBytes: number; keylessBudgetBytes: number; addressBudgetBytes: number };
};

type Env = Record<string, string | undefined>;

/** Reads and checks every setting; `flags` wins over the environment. Throws ConfigError naming the setting. */
export function loadConfig(env: Env, flags: Record<string, string | undefined> = {}): Config {
  const s = readSettings(env, flags);
  const budgetBytes = s.readingBudgetBytes || Infinity;
  const reading = {
    budgetBytes,
    keyBudgetBytes: s.readingKeyBudgetBytes || Infinity,
    keylessBudgetBytes: s.readingKeylessBudgetBytes === null ? keylessPoolFor(budgetBytes) : s.readingKeylessBudgetBytes || Infinity,
    addressBudgetBytes: s.readingAddressBudgetBytes || Infinity,
  };
  // A project's share is part of the whole: a larger share would never be reached.
  if (Number.isFinite(reading.keyBudgetBytes) && reading.keyBudgetBytes > reading.budgetBytes) {
    throw new ConfigError(
      `${settingName(SETTINGS.readingKeyBudgetBytes)} (${s.readingKeyBudgetBytes}) must not be over ${settingName(SETTINGS.readingBudgetBytes)} (${s.readingBudgetBytes}): a project's share is part of the whole.`,
    );
  }
  // The keyless pool is taken from the whole: bodies with a key in a header keep at least one body's room.
  if (Number.isFinite(reading.keylessBudgetBytes) && reading.keylessBudgetBytes + MAX_BODY_BYTES > reading.budgetBytes) {
    throw new ConfigError(
      `${settingName(SETTINGS.readingKeylessBudgetBytes)} (${reading.keylessBudgetBytes}${s.readingKeylessBudgetBytes === null ? ', an eighth of the budget' : ''}) must leave at least ${MAX_BODY_BYTES} bytes of ${settingName(SETTINGS.readingBudgetBytes)} (${s.readingBudgetBytes}) to bodies with their key in a header.`,
    );
  }
  const pool = Number.isFinite(reading.keylessBudgetBytes) ? reading.keylessBudgetBytes : reading.budgetBytes;
  if (Number.isFinite(reading.addressBudgetBytes) && reading.addressBudgetBytes > pool) {
    throw new ConfigError(
      `${settingName(SETTINGS.readingAddressBudgetBytes)} (${s.readingAddressBudgetBytes}) must not be over ${settingName(SETTINGS.readingKeylessBudgetBytes)} (${pool}): an address's share is part of the pool.`,
    );
  }
  return {
    ...s,
    limits: { burst: s.limitBurst, sustained: s.limitSustained, keyRps: s.limitKeyRps, import: s.limitImport },
    admission: { budgetBytes: s.bodyBudgetBytes || Infinity, waitMs: s.bodyWaitMs },
    reading,
  };
}
