/**
 * The figures both reference documents state, imported from the modules that
 * enforce them (each limit is a constant of its owner), so a changed limit
 * changes the docs with it. The docs import the limits; nothing outside
 * docs/ imports this file.
 */
import { KEY_PREFIX } from '../domain/keys.js';
import { DEFAULT_LIMITS, KEY_RETRY_AFTER, PROJECT_WINDOWS } from '../domain/limits/policies.js';
import { ADMISSION_WAIT_MS } from '../edge/admission.js';
import { MAX_KEY_LENGTH } from '../domain/storable.js';
import { MAX_BODY_BYTES } from '../edge/read-body.js';
import { MAX_ITEMS } from '../pipeline/check-batch.js';
import { MAX_NAME_LENGTH } from '../domain/items/fields/identity-fields.js';
import { MAX_INSERT_ID_LENGTH } from '../domain/items/fields/ids.js';
import { MAX_PROPERTY_BYTES, MAX_PROPERTY_DEPTH, MAX_PROPERTY_KEYS } from '../domain/items/fields/properties.js';
import { MAX_FUTURE_MS, MAX_PAST_MS } from '../domain/items/fields/timestamp.js';

export { BATCH_PATH, IMPORT_PATH } from '../intakes/batch/endpoints.js';
export { DEFAULT_RETENTION_DAYS } from '../domain/retention.js';
export { DOCS_PATH, OPENAPI_PATH, REFERENCE_SCRIPT_PATH } from '../edge/docs-paths.js';

export { ADMISSION_WAIT_MS, KEY_PREFIX, KEY_RETRY_AFTER, MAX_BODY_BYTES, MAX_INSERT_ID_LENGTH, MAX_ITEMS, MAX_NAME_LENGTH, MAX_PROPERTY_BYTES, MAX_PROPERTY_DEPTH, MAX_PROPERTY_KEYS };
export { MAX_KEY_LENGTH };

export const PAST_DAYS = MAX_PAST_MS / 86_400_000;
export const FUTURE_MINUTES = MAX_FUTURE_MS / 60_000;

/** The default windows of each endpoint; the window lengths are fixed, the quotas configurable. */
const policiesOf = (group: 'batch' | 'import') => PROJECT_WINDOWS.filter((w) => w.group === group).map((w) => ({
  name: w.name,
  quota: DEFAULT_LIMITS[w.setting],
  windowSeconds: w.windowMs / 1000,
  retryAfter: w.retryAfter,
  env: `INLET_LIMIT_${w.setting.toUpperCase()}`,
}));
/** The windows of the live batch endpoint. */
export const POLICIES = policiesOf('batch');
/** The one window of the import endpoint. */
export const IMPORT_POLICIES = policiesOf('import');
/** The import endpoint's RateLimit-Policy header with the default limits. */
export const IMPORT_POLICY_HEADER = IMPORT_POLICIES.map((p) => `"${p.name}";q=${p.quota};w=${p.windowSeconds}`).join(', ');
export const KEY_RPS = DEFAULT_LIMITS.keyRps;

/** The RateLimit-Policy header as it reads with the default limits. */
export const DEFAULT_POLICY_HEADER = POLICIES.map((p) => `"${p.name}";q=${p.quota};w=${p.windowSeconds}`).join(', ');

/** A RateLimit header as it reads after a first request of 10 items, with the default limits. */
export const EXAMPLE_RATELIMIT_HEADER = POLICIES.map((p) => `"${p.name}";r=${p.quota - 10};t=${p.windowSeconds}`).join(', ');

/** The RateLimit-Policy header of a refusal by the per-key limit, with the default limit. */
export const KEY_POLICY_HEADER = `"per_key";q=${KEY_RPS};w=1`;

/** The RateLimit header of that refusal: nothing left, the oldest request leaves within the second. */
export const KEY_RATELIMIT_HEADER = '"per_key";r=0;t=1';

/** Statuses whose answers always carry Retry-After (429 from a limit, 503 from a failed write). */
export const RETRY_AFTER_STATUSES: ReadonlySet<number> = new Set([429, 503]);

/** Numbers as the docs write them: 50,000 rather than 50000. */
export function formatNumber(n: number): string {
  return n.toLocaleString('en-US');
}
