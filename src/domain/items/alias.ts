import { type JobAt, type Writes, accepted } from '../ingest/pass-context.js';
import type { ItemOutcome } from '../ingest/job.js';
import type { EnrichedItem } from './enriched-item.js';
import { refuse, sent, take } from './fields/field-error.js';
import { checkDistinctId } from './fields/identity-fields.js';
import type { ItemKind, ItemOf } from './kind.js';

/** From now on one user id means the same person as another. */
export type AliasItem = ItemOf<{
  type: 'alias';
  /** An alias has no event name. */
  event: null;
  /** The user id whose person `previousId` joins. */
  distinctId: string;
  /** The id that from now on means the same person as `distinctId`. */
  previousId: string;
}>;

export const alias: ItemKind<AliasItem> = {
  type: 'alias',
  own: { previousId: true },
  // It names no browser person or session, and sets no traits.
  wireFields: ['type', 'distinct_id', 'insert_id', 'timestamp', 'previous_id'],
  requiredFields: ['type', 'distinct_id', 'previous_id'],
  ignores: ['event', 'anonymous_id', 'session_id', 'properties'],
  check: {
    own(raw, errors) {
      if (!sent(raw.distinct_id)) {
        errors.push({ code: 'missing_identity', field: 'distinct_id', message: 'An alias item needs a "distinct_id": the user id that "previous_id" joins.' });
      }
      const previousId = sent(raw.previous_id)
        ? take(checkDistinctId(raw.previous_id, 'previous_id'), errors)
        : refuse(errors, 'invalid_previous_id', 'previous_id', 'An alias item needs a "previous_id": the id that from now on means the same person as "distinct_id".');
      if (previousId !== null && previousId === raw.distinct_id) {
        refuse(errors, 'invalid_previous_id', 'previous_id', '"previous_id" equals "distinct_id"; an alias links two different ids.');
      }
    },
    build(raw, index, distinctId, _anonymousId, _sessionId, insertId, timestamp, _props, droppedKeys) {
      // An alias with no error has both ids.
      const item: EnrichedItem<'alias'> = {
        index, type: 'alias', event: null, distinctId: distinctId!, anonymousId: null, sessionId: null, insertId, timestamp,
        properties: {}, propertiesJson: '{}', enrichment: {}, userAgent: null, droppedKeys, previousId: raw.previous_id as string,
      };
      return { ok: true, item, dropped: null };
    },
  },
  metered: false,
  storeRefuses: ['illegal_merge'],
  schemaName: 'AliasItem',
  schema: (k) => {
    const { insert_id: insertId, timestamp } = k.common();
    return {
      type: 'object',
      description: `From now on previous_id means the same person as distinct_id: linked, or the person of previous_id merged into the person of distinct_id, never two identified people (illegal_merge). Not metered. ${k.itemDescription}`,
      required: [...alias.requiredFields],
      properties: {
        type: { type: 'string', const: 'alias' },
        distinct_id: k.name(k.distinctId),
        previous_id: k.name('The id that joins the person of distinct_id, under the distinct_id rules and not equal to it (invalid_previous_id).'),
        insert_id: insertId!,
        timestamp: timestamp!,
        event: k.ignored('alias'),
        anonymous_id: k.ignored('alias'),
        session_id: k.ignored('alias'),
        properties: k.ignored('alias'),
      },
    };
  },
  linksDistinctId: () => true,
  // The previous id is suppressed with its person as any distinct_id is, and its person is looked up.
  otherId: (item) => item.previousId,
  write: writeAlias,
  dryRun: (item, effect) => ({ alias: { previous_id: item.previousId, effect: effect?.kind === 'alias' ? effect.effect : 'none' } }),
  // An alias carries ids only.
  sendable: (item, common) => ({ type: 'alias', previous_id: item.previousId, ...common, properties: undefined }),
};

/** An alias links or merges as PersonResolver.alias decides; an illegal merge is refused and changes nothing. */
function writeAlias(w: Writes, item: AliasItem, at: JobAt): ItemOutcome {
  const r = w.people.alias(item.distinctId, item.previousId);
  if (r === 'illegal') {
    return {
      index: item.index,
      status: 'refused',
      code: 'illegal_merge',
      field: 'previous_id',
      message: 'The person of "previous_id" is also known by another distinct_id, and alias never merges two identified people. Nothing was changed.',
    };
  }
  return accepted(w, item, at, null, r.person, { kind: 'alias', effect: r.effect });
}
