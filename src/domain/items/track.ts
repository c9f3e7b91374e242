import { quoted } from '../echo.js';
import { newEventId } from '../ids.js';
import { storedProperties } from '../ingest/stored-properties.js';
import type { Resolved } from '../people/resolver.js';
import { type JobAt, type Writes, accepted } from '../ingest/pass-context.js';
import type { ItemOutcome } from '../ingest/job.js';
import type { ShownItem } from './enriched-item.js';
import { enrichTrack } from './fields/enrich.js';
import { type FieldError, sent, take } from './fields/field-error.js';
import { checkName } from './fields/identity-fields.js';
import { isReservedEventName } from './fields/ids.js';
import type { ItemKind, ItemOf } from './kind.js';

/** Records one event: the only metered type. */
export type TrackItem = ItemOf<{
  type: 'track';
  event: string;
  /** The event's stored properties text (storedProperties), rendered where the body is checked. */
  storedJson: string;
}>;

export const track: ItemKind<TrackItem> = {
  type: 'track',
  own: { storedJson: true },
  wireFields: ['type', 'event', 'distinct_id', 'anonymous_id', 'session_id', 'insert_id', 'timestamp', 'properties', 'context'],
  requiredFields: ['event'],
  ignores: [],
  check: {
    own(raw, errors, _dropped, ctx, index) {
      checkEvent(raw.event, errors, ctx.ownEvents?.has(index) === true);
      if (!sent(raw.distinct_id) && !sent(raw.anonymous_id)) {
        errors.push({ code: 'missing_identity', field: 'distinct_id', message: 'Send a "distinct_id" (your user id) or an "anonymous_id" (a browser person key).' });
      }
    },
    build(raw, index, distinctId, anonymousId, sessionId, insertId, timestamp, props, droppedKeys, _more, ctx) {
      const { enrichment, dropped } = enrichTrack(props.userAgent, ctx.source);
      const item: ShownItem & { type: 'track' } = {
        index, type: 'track', event: raw.event as string, distinctId, anonymousId, sessionId, insertId, timestamp,
        properties: props.properties, propertiesJson: props.json!, enrichment, userAgent: props.userAgent, droppedKeys,
      };
      // Only the store reads the stored text: an item dropped here goes without.
      if (dropped !== null) return { ok: true, item, dropped };
      return { ok: true, item: Object.assign(item, { storedJson: storedProperties(item) }), dropped: null };
    },
  },
  metered: true,
  storeRefuses: [],
  schemaName: 'TrackItem',
  schema: (k) => ({
    type: 'object',
    description: `Records one event. Needs an event and a distinct_id or an anonymous_id. ${k.itemDescription}`,
    required: [...track.requiredFields],
    properties: {
      type: { type: ['string', 'null'], enum: ['track', null], default: 'track' },
      event: k.name(
        'Event name. No control characters; names starting with "$" other than $agent_step and $agent_run, and identify, alias, group and merge in any case, are reserved.',
      ),
      distinct_id: k.orNull(k.name(`${k.distinctId} Required unless anonymous_id is sent.`)),
      ...k.common(),
    },
    // Not both identities left out (or null).
    not: { properties: { distinct_id: { type: 'null' }, anonymous_id: { type: 'null' } } },
  }),
  linksDistinctId: (item) => item.anonymousId === null,
  otherId: () => null,
  write: writeTrack,
  dryRun: (item) => ({ session: { id: item.sessionId, server_session: item.sessionId === null } }),
  sendable: (item, common) => ({ type: 'track', event: item.event, ...common }),
};

function checkEvent(v: unknown, errors: FieldError[], ownName: boolean): void {
  if (!sent(v)) {
    errors.push({ code: 'missing_event_name', field: 'event', message: 'A track item needs an "event" name.' });
    return;
  }
  const name = take(checkName(v, 'event'), errors);
  if (name !== null && !ownName && isReservedEventName(name)) {
    errors.push({
      code: 'reserved_event_name',
      field: 'event',
      message: `${quoted(name)} is a reserved event name. Names starting with "$" (other than $agent_step and $agent_run) and identify, alias, group and merge are kept for Inlet itself.`,
    });
  }
}

/** A track within the plan's limit becomes an event of its person; beyond it, it is dropped. */
function writeTrack(w: Writes, item: TrackItem, at: JobAt): ItemOutcome {
  const left = w.room.get(at.month)!;
  if (left <= 0) return { index: item.index, status: 'dropped', reason: 'collection_paused' };
  w.room.set(at.month, left - 1);
  w.out.usage.set(at.month, (w.out.usage.get(at.month) ?? 0) + 1);
  // A track names someone (the checks see to it): its browser person, or else its user.
  return trackEvent(w, item, at, item.anonymousId === null ? w.people.byDistinctId(item.distinctId!) : w.people.byAnonymousId(item.anonymousId));
}

function trackEvent(w: Writes, item: TrackItem, at: JobAt, person: Resolved): ItemOutcome {
  const eventId = newEventId(at.receivedAt);
  w.out.events.push({
    id: eventId,
    projectId: w.projectId,
    sourceId: w.sourceId,
    event: item.event,
    distinctId: item.distinctId,
    anonymousId: item.anonymousId,
    personId: person.id,
    sessionId: item.sessionId,
    timestamp: item.timestamp,
    receivedAt: at.receivedAt,
    insertId: item.insertId,
    properties: item.storedJson,
  });
  return accepted(w, item, at, eventId, person);
}
