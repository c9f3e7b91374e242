import { isIP } from 'node:net';
import currencyCodes from 'currency-codes';
import { iso31661 } from 'iso-3166';
import { INSERT_ID } from './ids.js';
import { isPlainObject } from './text.js';

/**
 * Keys the server sets itself. A client that sends one has them stripped
 * silently, so an SDK that forwards browser enrichment is not refused.
 */
export const ENRICHMENT_KEYS = new Set([
  '$source_id',
  '$lib',
  '$lib_version',
  '$browser',
  '$browser_version',
  '$os',
  '$os_version',
  '$device_type',
  '$event_id',
  '$person_id',
  '$received_at',
]);

const COUNTRIES = new Set(iso31661.map((c) => c.alpha2));
// The ISO 4217 list as published (Intl's list varies by Node version and
// keeps withdrawn codes while missing metals and fund codes).
const CURRENCIES = new Set(currencyCodes.codes());

/** A check of one accepted `$` key: null when the value is fine, else why not. */
type ValueCheck = (value: unknown) => string | null;

/**
 * The `$` keys a server may send, each with the form its value must have.
 * `$user_agent` and `$ip` are also accepted but handled by normalisation.
 * A Map: the key looked up is the client's, and must never find an inherited name.
 */
export const ACCEPTED_DOLLAR_KEYS: ReadonlyMap<string, ValueCheck> = new Map(Object.entries({
  $ip: (v) => (typeof v === 'string' && isIP(v) !== 0 ? null : '"$ip" must be an IPv4 or IPv6 address.'),
  $user_agent: (v) => (typeof v === 'string' ? null : '"$user_agent" must be a string.'),
  $country: (v) =>
    typeof v === 'string' && COUNTRIES.has(v)
      ? null
      : '"$country" must be an ISO 3166-1 alpha-2 country code in upper case, such as "DE" or "US".',
  $current_url: (v) => (isHttpUrl(v) ? null : '"$current_url" must be an absolute http or https URL.'),
  $groups: (v) => checkGroups(v),
  $revenue: (v) =>
    typeof v === 'number' && Number.isFinite(v) ? null : '"$revenue" must be a finite number, such as 19.99.',
  $currency: (v) =>
    typeof v === 'string' && CURRENCIES.has(v)
      ? null
      : '"$currency" must be an ISO 4217 currency code in upper case, such as "EUR" or "USD".',
  $insert_id: (v) =>
    typeof v === 'string' && INSERT_ID.test(v)
      ? null
      : '"$insert_id" must be 1 to 80 characters of A-Z, a-z, 0-9, "_" and "-".',
} satisfies Record<string, ValueCheck>));

function isHttpUrl(v: unknown): boolean {
  if (typeof v !== 'string') return false;
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

function checkGroups(v: unknown): string | null {
  const form = '"$groups" must be an object of group type to group key, both non-empty strings, such as {"company": "acme"}.';
  if (!isPlainObject(v)) return form;
  for (const [type, key] of Object.entries(v)) {
    if (type.length === 0 || typeof key !== 'string' || key.length === 0) return form;
  }
  return null;
}
