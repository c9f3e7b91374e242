import { MAX_KEY_LENGTH } from '../storable.js';
import type { Resolved } from '../people/resolver.js';
import { type JobAt, type Writes, accepted } from '../ingest/pass-context.js';
import type { ItemOutcome } from '../ingest/job.js';
import type { ItemKind, ItemOf } from './kind.js';

/** At most this many trait names in one unset. */
export const MAX_UNSET_KEYS = 255;

/** Sets traits on the person of a user id. */
export type IdentifyItem = ItemOf<{
  type: 'identify';
  /** An identify has no event name. */
  event: null;
  /** The user id the traits are set on. */
  distinctId: string;
  /** Traits set only where the person has no value for the key yet; null when not sent. */
  setOnce: Record<string, unknown> | null;
  /** Trait keys removed as of the item's timestamp; null when not sent. */
  unset: string[] | null;
}>;

export const identify: ItemKind<IdentifyItem> = {
  type: 'identify',
  own: { setOnce: true, unset: true },
  // It reads "event" only to list it among the keys not kept, first.
  wireFields: ['type', 'event', 'distinct_id', 'anonymous_id', 'session_id', 'insert_id', 'timestamp', 'properties', 'set_once', 'unset'],
  requiredFields: ['type', 'distinct_id'],
  ignores: [],
  metered: false,
  storeRefuses: [],
  schemaName: 'IdentifyItem',
  schema: (k) => ({
    type: 'object',
    description: `Sets traits (its properties) on the person of distinct_id, newest per key by timestamp; set_once sets traits the person has no value for; unset removes traits as of the timestamp. ${k.itemDescription}`,
    required: [...identify.requiredFields],
    properties: {
      type: { type: 'string', const: 'identify' },
      event: { description: 'Ignored on identify, whatever it holds.' },
      distinct_id: k.name(k.distinctId),
      ...k.common(),
      set_once: k.orNull({ ...k.ref('Properties'), description: 'Traits set only where the person has no value for the key yet, whatever the timestamps; checked as properties are (invalid_set_once).' }),
      unset: k.orNull({
        type: 'array',
        maxItems: MAX_UNSET_KEYS,
        items: { type: 'string', minLength: 1, maxLength: MAX_KEY_LENGTH },
        description: 'Trait names to remove as of the timestamp: a value set at or before it goes, one set after it stays. None may also be a key of properties (invalid_unset).',
      }),
    },
  }),
  // It links its distinct_id even when it names a browser person too.
  linksDistinctId: () => true,
  otherId: () => null,
  write: writeIdentify,
  dryRun: (item) => ({ set_once: item.setOnce, unset: item.unset }),
  sendable: (item, common) => ({ type: 'identify', ...common, ...(item.setOnce === null ? {} : { set_once: item.setOnce }), ...(item.unset === null ? {} : { unset: item.unset }) }),
};

/** An identify sets traits on its user's person, linking the browser person it names to that user. */
function writeIdentify(w: Writes, item: IdentifyItem, at: JobAt): ItemOutcome {
  const person = item.anonymousId === null ? w.people.byDistinctId(item.distinctId) : w.people.linkToBrowserPerson(item.distinctId, item.anonymousId);
  return identifyTraits(w, item, at, person);
}

function identifyTraits(w: Writes, item: IdentifyItem, at: JobAt, person: Resolved): ItemOutcome {
  for (const [key, value] of Object.entries(item.properties)) {
    w.people.traits.push({ personId: person.id, key, value: JSON.stringify(value), setAt: item.timestamp });
  }
  // An unset is a trait write of no value, ordered by timestamp as any (newestTraits).
  for (const key of item.unset ?? []) w.people.traits.push({ personId: person.id, key, value: null, setAt: item.timestamp });
  for (const [key, value] of Object.entries(item.setOnce ?? {})) {
    w.people.setOnce.push({ personId: person.id, key, value: JSON.stringify(value), setAt: item.timestamp });
  }
  return accepted(w, item, at, null, person);
}
