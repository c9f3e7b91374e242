import { INSERT_ID } from '../domain/items/fields/ids.js';
import { ACCEPTED_DOLLAR_KEYS, ENRICHMENT_KEYS } from '../domain/items/fields/reserved-properties.js';

/** How one accepted `$` property is described on the page and in the schema. */
export interface DollarKeyDoc {
  key: string;
  note: string;
  schema: Record<string, unknown>;
}

const DOCS: Record<string, Omit<DollarKeyDoc, 'key'>> = {
  $ip: {
    note: 'An IPv4 or IPv6 address. Stored only if the source is set to record IP addresses; otherwise it is removed.',
    schema: { type: 'string', anyOf: [{ format: 'ipv4' }, { format: 'ipv6' }] },
  },
  $user_agent: {
    note: 'Any string. Inlet derives browser, OS and device type from it and checks it against known bots; the raw string itself is never kept. Only its first 1,024 characters are read, control characters are skipped and a lone surrogate is read as U+FFFD, so every derived value can be stored.',
    schema: { type: 'string' },
  },
  $country: {
    note: 'An ISO 3166-1 alpha-2 code in capitals, such as DE or US.',
    schema: { type: 'string', pattern: '^[A-Z]{2}$' },
  },
  $current_url: {
    note: 'An absolute URL with the http or https scheme.',
    schema: { type: 'string', format: 'uri', pattern: '^[Hh][Tt][Tt][Pp][Ss]?:' },
  },
  $groups: {
    note: 'An object mapping a group type to a group key, both non-empty strings, such as {"company": "acme"}. Stored with the event as sent.',
    schema: { type: 'object', propertyNames: { minLength: 1 }, additionalProperties: { type: 'string', minLength: 1 } },
  },
  $revenue: {
    note: 'A finite number, such as 19.99. Stored with the event as sent.',
    schema: { type: 'number' },
  },
  $currency: {
    note: 'An ISO 4217 code in capitals, such as EUR.',
    schema: { type: 'string', pattern: '^[A-Z]{3}$' },
  },
  $insert_id: {
    note: 'Same form as insert_id, and used as the insert_id when that field is left out. If both are sent they must be equal.',
    schema: { type: 'string', pattern: INSERT_ID.source },
  },
};

/** Every `$` property the pipeline accepts, in its order, with how to describe it. */
export function acceptedDollarKeys(): DollarKeyDoc[] {
  // A key added to the pipeline but not here still gets listed, just without detail.
  return [...ACCEPTED_DOLLAR_KEYS.keys()].map((key) => ({ key, ...(DOCS[key] ?? { note: 'Accepted.', schema: {} }) }));
}

/** The `$` properties the server sets itself and strips silently when a client sends them. */
export function enrichmentKeys(): string[] {
  return [...ENRICHMENT_KEYS];
}
