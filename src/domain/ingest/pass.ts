import type { IngestTx, NewEventRow, SuppressedIds } from '../../stores/port.js';
import { newEventId } from '../ids.js';
import { keyWorks } from '../keys.js';
import { monthOf } from '../month.js';
import { storedProperties } from './stored-properties.js';
import { PersonResolver, newestTraits } from '../people/resolver.js';
import { type IngestJob, type ItemOutcome, KeyNoLongerWorksError } from './job.js';

/** What a pass gives each job: its outcomes, or the refusal of its key. */
export type JobResult = ItemOutcome[] | KeyNoLongerWorksError;

/**
 * Writes jobs of one project and source inside a transaction the engine
 * opened, exactly as if they came one after the other, with the same rules on
 * every engine: a job whose key no longer works at `now` is refused whole;
 * repeats of a stored insert_id are answered as duplicates and not metered;
 * track items beyond the monthly limit are dropped in order; people are
 * resolved in bulk; traits keep the newest value per key.
 *
 * Taking many jobs at once is commit batching at the level of the algorithm: a
 * burst of one-item requests costs one lookup of each kind and one insert per
 * table, not one each.
 */
export async function ingestPass(tx: IngestTx, all: IngestJob[], now: number): Promise<JobResult[]> {
  const { projectId, sourceId } = all[0]!;
  if (all.some((j) => j.projectId !== projectId || j.sourceId !== sourceId)) {
    throw new Error('ingestPass takes jobs of one project and source');
  }
  // One writer per project at a time: the key check, the meter, the plan
  // limit, insert_ids and person links are then decided on data no one else
  // is changing, and a key revoked while its request was read counts here.
  await tx.lockProject(projectId);
  const keys = await tx.keyStates(unique(all.map((j) => j.keyId)));
  const works = (j: IngestJob): boolean => {
    const k = keys.get(j.keyId);
    return k !== undefined && k.ownersLive && keyWorks(k, now);
  };
  const jobs = all.filter(works);
  const written = jobs.length === 0 ? [] : await write(tx, jobs, projectId, sourceId);
  let next = 0;
  return all.map((j) => (works(j) ? written[next++]! : new KeyNoLongerWorksError()));
}

async function write(tx: IngestTx, jobs: IngestJob[], projectId: string, sourceId: string): Promise<ItemOutcome[][]> {
  const limit = await tx.monthlyEventLimit(projectId);
  // Room left under the plan limit, per metering month of the jobs that carry
  // track items: read once here, so the loop below never waits on the store.
  const room = new Map<string, number>();
  for (const j of jobs) {
    const month = monthOf(j.receivedAt);
    if (room.has(month) || !j.items.some((i) => i.type === 'track')) continue;
    room.set(month, limit === null ? Infinity : Math.max(0, limit - (await tx.usage(projectId, month))));
  }

  // What the lookups below ask for, gathered in one loop over the items (each list in item order, once per value).
  const distinctIds = new Set<string>();
  const insertIds: string[] = [];
  const linkedIds = new Set<string>();
  const anonymousIds = new Set<string>();
  for (const j of jobs) {
    for (const i of j.items) {
      if (i.distinctId !== null) {
        distinctIds.add(i.distinctId);
        if (i.anonymousId === null || i.type === 'identify') linkedIds.add(i.distinctId);
      }
      if (i.anonymousId !== null) anonymousIds.add(i.anonymousId);
      if (i.insertId !== null) insertIds.push(i.insertId);
    }
  }

  // Read under the lock: an erasure with suppression takes it too, so no item slips between the two.
  // An erased person's id is suppressed with its distinct_ids: an anonymous_id naming it would re-create it.
  const suppressed =
    distinctIds.size > 0 || anonymousIds.size > 0 ? await tx.findSuppressed(projectId, [...distinctIds], [...anonymousIds]) : NONE_SUPPRESSED;
  const stored = insertIds.length > 0 ? await tx.findInsertIds(sourceId, insertIds) : new Map<string, string | null>();

  const people = new PersonResolver(tx, projectId, jobs[0]!.receivedAt);
  await people.preload([...linkedIds], [...anonymousIds]);

  const all: ItemOutcome[][] = [];
  const events: NewEventRow[] = [];
  const metered = new Map<string, number>();
  const claims: { insertId: string; eventId: string | null }[] = [];
  // A person made in this pass is new only to the job that made it.
  const madeBy = new Map<string, number>();
  for (const [j, { items: jobItems, receivedAt }] of jobs.entries()) {
    const month = monthOf(receivedAt);
    const outcomes: ItemOutcome[] = [];
    all.push(outcomes);
    for (const item of jobItems) {
      const erased =
        (item.distinctId !== null && suppressed.distinctIds.has(item.distinctId)) || (item.anonymousId !== null && suppressed.personIds.has(item.anonymousId));
      if (erased) {
        outcomes.push({ index: item.index, status: 'dropped', reason: 'suppressed' });
        continue;
      }
      if (item.insertId !== null && stored.has(item.insertId)) {
        outcomes.push({ index: item.index, status: 'duplicate', eventId: stored.get(item.insertId) ?? null });
        continue;
      }
      let eventId: string | null = null;
      let person;
      if (item.type === 'track') {
        const left = room.get(month)!;
        if (left <= 0) {
          outcomes.push({ index: item.index, status: 'dropped', reason: 'collection_paused' });
          continue;
        }
        room.set(month, left - 1);
        metered.set(month, (metered.get(month) ?? 0) + 1);
        person = item.anonymousId !== null ? await people.byAnonymousId(item.anonymousId) : people.byDistinctId(item.distinctId!);
        eventId = newEventId(receivedAt);
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
          properties: item.storedJson ?? storedProperties(item),
        });
      } else {
        person =
          item.anonymousId !== null
            ? await people.linkToBrowserPerson(item.distinctId!, item.anonymousId)
            : people.byDistinctId(item.distinctId!);
        for (const [key, value] of Object.entries(item.properties)) {
          people.traits.push({ personId: person.id, key, value: JSON.stringify(value), setAt: item.timestamp });
        }
      }
      if (item.insertId !== null) {
        claims.push({ insertId: item.insertId, eventId });
        // A later item with this insert_id (in another job of the batch) is a repeat of this one.
        stored.set(item.insertId, eventId);
      }
      if (person.isNew && !madeBy.has(person.id)) madeBy.set(person.id, j);
      outcomes.push({ index: item.index, status: 'accepted', eventId, personId: person.id, personIsNew: person.isNew && madeBy.get(person.id) === j });
    }
  }

  await people.flush();
  if (people.traits.length > 0) await tx.upsertTraits(projectId, newestTraits(people.traits));
  if (events.length > 0) await tx.insertEvents(events);
  if (claims.length > 0) await tx.addInsertIds(sourceId, claims);
  for (const [month, n] of metered) await tx.addUsage(projectId, month, n);
  return all;
}

const NONE_SUPPRESSED: SuppressedIds = { distinctIds: new Set(), personIds: new Set() };

function unique(xs: string[]): string[] {
  return [...new Set(xs)];
}
