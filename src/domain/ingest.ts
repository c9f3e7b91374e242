import type { IngestJob, IngestTx, ItemOutcome, NewEventRow } from '../stores/port.js';
import { newEventId } from './ids.js';
import { monthOf } from './month.js';
import { PersonResolver, newestTraits } from './people/resolver.js';

/**
 * Writes one job inside a transaction the store opened, with the same rules on
 * every engine: repeats of a stored insert_id are answered as duplicates and
 * not metered; track items beyond the monthly limit are dropped in order;
 * people are resolved in bulk; traits keep the newest value per key.
 */
export async function ingestInTx(tx: IngestTx, job: IngestJob): Promise<ItemOutcome[]> {
  const { projectId, sourceId, receivedAt, items } = job;
  // One writer per project at a time: the meter, the plan limit, insert_ids
  // and person links are then decided on data no one else is changing.
  await tx.lockProject(projectId);
  const month = monthOf(receivedAt);
  const limit = await tx.monthlyEventLimit(projectId);
  let room = limit === null ? Infinity : Math.max(0, limit - (await tx.usage(projectId, month)));

  const insertIds = items.flatMap((i) => (i.insertId === null ? [] : [i.insertId]));
  const stored = insertIds.length > 0 ? await tx.findInsertIds(sourceId, insertIds) : new Map<string, string | null>();

  const people = new PersonResolver(tx, projectId, receivedAt);
  await people.preload(
    unique(items.flatMap((i) => (i.distinctId !== null && (i.anonymousId === null || i.type === 'identify') ? [i.distinctId] : []))),
    unique(items.flatMap((i) => (i.anonymousId === null ? [] : [i.anonymousId]))),
  );

  const outcomes: ItemOutcome[] = [];
  const events: NewEventRow[] = [];
  const claims: { insertId: string; eventId: string | null }[] = [];
  for (const item of items) {
    if (item.insertId !== null && stored.has(item.insertId)) {
      outcomes.push({ index: item.index, status: 'duplicate', eventId: stored.get(item.insertId) ?? null });
      continue;
    }
    if (item.type === 'track') {
      if (room <= 0) {
        outcomes.push({ index: item.index, status: 'dropped', reason: 'collection_paused' });
        continue;
      }
      room--;
      const person = item.anonymousId !== null ? await people.byAnonymousId(item.anonymousId) : await people.byDistinctId(item.distinctId!);
      const eventId = newEventId(receivedAt);
      events.push({
        id: eventId,
        projectId,
        sourceId,
        event: item.event!,
        distinctId: item.distinctId,
        anonymousId: item.anonymousId,
        personId: person.id,
        sessionId: item.sessionId,
        timestamp: item.timestamp,
        receivedAt,
        insertId: item.insertId,
        properties: JSON.stringify({ ...item.properties, ...item.enrichment }),
      });
      if (item.insertId !== null) claims.push({ insertId: item.insertId, eventId });
      outcomes.push({ index: item.index, status: 'accepted', eventId, personId: person.id, personIsNew: person.isNew });
    } else {
      const person =
        item.anonymousId !== null
          ? await people.linkToBrowserPerson(item.distinctId!, item.anonymousId)
          : await people.byDistinctId(item.distinctId!);
      for (const [key, value] of Object.entries(item.properties)) {
        people.traits.push({ personId: person.id, key, value: JSON.stringify(value), setAt: item.timestamp });
      }
      if (item.insertId !== null) claims.push({ insertId: item.insertId, eventId: null });
      outcomes.push({ index: item.index, status: 'accepted', eventId: null, personId: person.id, personIsNew: person.isNew });
    }
    // A later item of the same job with this insert_id is a repeat of this one.
    if (item.insertId !== null) stored.set(item.insertId, claims[claims.length - 1]!.eventId);
  }

  await people.flush();
  if (people.traits.length > 0) await tx.upsertTraits(projectId, newestTraits(people.traits));
  if (events.length > 0) await tx.insertEvents(events);
  if (claims.length > 0) await tx.addInsertIds(sourceId, claims);
  if (events.length > 0) await tx.addUsage(projectId, month, events.length);
  return outcomes;
}

function unique(xs: string[]): string[] {
  return [...new Set(xs)];
}
