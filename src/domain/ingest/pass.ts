import { type IngestTx, type NewEventRow, type PassQuery, type PassWrites, type SuppressedIds, noPassWrites } from '../../stores/port.js';
import { newEventId } from '../ids.js';
import { keyWorks } from '../keys.js';
import { monthOf } from '../month.js';
import { PersonResolver, type Resolved, newestTraits } from '../people/resolver.js';
import { type IngestItem, unhandledType } from './item.js';
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
 * The pass reads everything its jobs need in one call (IngestTx.read), decides
 * in memory, and hands the engine one bundle of writes (IngestTx.write).
 * Taking many jobs at once is commit batching at the level of the algorithm:
 * a burst of one-item requests costs one read and one write, not one each.
 */
export async function ingestPass(tx: IngestTx, all: IngestJob[], now: number): Promise<JobResult[]> {
  const { projectId, sourceId } = all[0]!;
  if (all.some((j) => j.projectId !== projectId || j.sourceId !== sourceId)) {
    throw new Error('ingestPass takes jobs of one project and source');
  }
  // Read under the project lock, which `read` takes first: the key check, the
  // meter, the plan limit, insert_ids and person links are then decided on
  // data no one else is changing, a key revoked while its request was read
  // counts here, and an erasure with suppression (which takes the lock too)
  // lets no item slip between the two.
  const q = query(all, projectId, sourceId);
  const state = await tx.read(q);
  const works = (j: IngestJob): boolean => {
    const k = state.keys.get(j.keyId);
    return k !== undefined && k.ownersLive && keyWorks(k, now);
  };
  const jobs = all.filter(works);
  if (jobs.length === 0) return all.map(() => new KeyNoLongerWorksError());

  const out = noPassWrites();
  const room = new Map<string, number>();
  const limit = state.monthlyEventLimit;
  for (const month of q.months) room.set(month, limit === null ? Infinity : Math.max(0, limit - (state.usage.get(month) ?? 0)));
  const w: Writes = {
    projectId, sourceId, people: new PersonResolver(state, out), room, suppressed: state.suppressed, stored: state.insertIds, out, madeBy: new Map(),
  };
  const written: ItemOutcome[][] = [];
  for (const [job, { items, receivedAt }] of jobs.entries()) {
    const at: JobAt = { job, receivedAt, month: monthOf(receivedAt) };
    const outcomes: ItemOutcome[] = [];
    written.push(outcomes);
    for (const item of items) outcomes.push(unwritten(w, item) ?? writeItem(w, item, at));
  }
  out.traits = newestTraits(w.people.traits);
  await tx.write({ projectId, sourceId, now: jobs[0]!.receivedAt }, out);

  let next = 0;
  return all.map((j) => (works(j) ? written[next++]! : new KeyNoLongerWorksError()));
}

/**
 * What the pass reads, gathered in one loop over the items (each list in item
 * order, once per value). An erased person's id is suppressed with its
 * distinct_ids: an anonymous_id naming it would re-create it.
 */
function query(jobs: IngestJob[], projectId: string, sourceId: string): PassQuery {
  const distinctIds = new Set<string>();
  const linkedIds = new Set<string>();
  const anonymousIds = new Set<string>();
  const insertIds: string[] = [];
  for (const j of jobs) {
    for (const i of j.items) {
      if (i.distinctId !== null) {
        distinctIds.add(i.distinctId);
        if (namesPersonByDistinctId(i)) linkedIds.add(i.distinctId);
      }
      if (i.anonymousId !== null) anonymousIds.add(i.anonymousId);
      if (i.insertId !== null) insertIds.push(i.insertId);
    }
  }
  const personIds = [...anonymousIds];
  return {
    projectId, sourceId, keyIds: unique(jobs.map((j) => j.keyId)), months: metered(jobs), insertIds, linkedIds: [...linkedIds], personIds,
    suppressed: { distinctIds: [...distinctIds], personIds },
  };
}

/** The metering months of the jobs that carry metered items, once each. */
function metered(jobs: IngestJob[]): string[] {
  const months = new Set<string>();
  for (const j of jobs) if (j.items.some(isMetered)) months.add(monthOf(j.receivedAt));
  return [...months];
}

/** What a pass gathers as it goes through the items, and writes at its end. */
interface Writes {
  projectId: string;
  sourceId: string;
  people: PersonResolver;
  /** Room left under the plan limit, by metering month of the jobs that carry metered items. */
  room: Map<string, number>;
  suppressed: SuppressedIds;
  /** Event ids of the insert_ids stored, by insert_id: before the pass, and by it. */
  stored: Map<string, string | null>;
  /** The bundle the pass hands the engine. */
  out: PassWrites;
  /** A person made in this pass is new only to the job that made it: its place in the pass. */
  madeBy: Map<string, number>;
}

/** The job an item came in: its place in the pass, when it arrived and the month it is metered in. */
interface JobAt {
  job: number;
  receivedAt: number;
  month: string;
}

/** Whether the item counts against the plan's monthly limit. */
function isMetered(item: IngestItem): boolean {
  switch (item.type) {
    case 'track':
      return true;
    case 'identify':
    case 'group':
    case 'alias':
      return false;
    default:
      return unhandledType(item);
  }
}

/** Whether the item's distinct_id is linked to its person (an identify links it even when it names a browser person too). */
function namesPersonByDistinctId(item: IngestItem): boolean {
  switch (item.type) {
    case 'track':
      return item.anonymousId === null;
    case 'identify':
    case 'alias':
      return true;
    case 'group':
      return item.distinctId !== null;
    default:
      return unhandledType(item);
  }
}

/** The outcome of an item not written, whatever its type: its person erased, or its insert_id stored already. */
function unwritten(w: Writes, item: IngestItem): ItemOutcome | null {
  if ((item.distinctId !== null && w.suppressed.distinctIds.has(item.distinctId)) || (item.anonymousId !== null && w.suppressed.personIds.has(item.anonymousId))) {
    return { index: item.index, status: 'dropped', reason: 'suppressed' };
  }
  if (item.insertId !== null && w.stored.has(item.insertId)) return { index: item.index, status: 'duplicate', eventId: w.stored.get(item.insertId) ?? null };
  return null;
}

function writeItem(w: Writes, item: IngestItem, at: JobAt): ItemOutcome {
  switch (item.type) {
    case 'track':
      return writeTrack(w, item, at);
    case 'identify':
      return writeIdentify(w, item, at);
    case 'group':
    case 'alias':
      return { index: item.index, status: 'refused', code: 'item_type_not_yet_supported', field: 'type', message: `"${item.type}" items are not stored yet.` };
    default:
      return unhandledType(item);
  }
}

/** A track within the plan's limit becomes an event of its person; beyond it, it is dropped. */
function writeTrack(w: Writes, item: IngestItem<'track'>, at: JobAt): ItemOutcome {
  const left = w.room.get(at.month)!;
  if (left <= 0) return { index: item.index, status: 'dropped', reason: 'collection_paused' };
  w.room.set(at.month, left - 1);
  w.out.usage.set(at.month, (w.out.usage.get(at.month) ?? 0) + 1);
  // A track names someone (the checks see to it): its browser person, or else its user.
  return trackEvent(w, item, at, item.anonymousId === null ? w.people.byDistinctId(item.distinctId!) : w.people.byAnonymousId(item.anonymousId));
}

function trackEvent(w: Writes, item: IngestItem<'track'>, at: JobAt, person: Resolved): ItemOutcome {
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

/** An identify sets traits on its user's person, linking the browser person it names to that user. */
function writeIdentify(w: Writes, item: IngestItem<'identify'>, at: JobAt): ItemOutcome {
  const person = item.anonymousId === null ? w.people.byDistinctId(item.distinctId) : w.people.linkToBrowserPerson(item.distinctId, item.anonymousId);
  return identifyTraits(w, item, at, person);
}

function identifyTraits(w: Writes, item: IngestItem<'identify'>, at: JobAt, person: Resolved): ItemOutcome {
  for (const [key, value] of Object.entries(item.properties)) {
    w.people.traits.push({ personId: person.id, key, value: JSON.stringify(value), setAt: item.timestamp });
  }
  return accepted(w, item, at, null, person);
}

/** The outcome of an item written, whatever its type; its insert_id is claimed. */
function accepted(w: Writes, item: IngestItem, at: JobAt, eventId: string | null, person: Resolved): ItemOutcome {
  if (item.insertId !== null) {
    w.out.insertIds.push({ insertId: item.insertId, eventId });
    // A later item with this insert_id (in another job of the batch) is a repeat of this one.
    w.stored.set(item.insertId, eventId);
  }
  if (person.isNew && !w.madeBy.has(person.id)) w.madeBy.set(person.id, at.job);
  return { index: item.index, status: 'accepted', eventId, personId: person.id, personIsNew: person.isNew && w.madeBy.get(person.id) === at.job };
}

function unique(xs: string[]): string[] {
  return [...new Set(xs)];
}
