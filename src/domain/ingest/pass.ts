import type { IngestTx, NewEventRow, SuppressedIds } from '../../stores/port.js';
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
  const room = await roomLeft(tx, jobs, projectId);
  const wanted = lookups(jobs);
  // Read under the lock: an erasure with suppression takes it too, so no item slips between the two.
  // An erased person's id is suppressed with its distinct_ids: an anonymous_id naming it would re-create it.
  const suppressed =
    wanted.distinctIds.size > 0 || wanted.anonymousIds.size > 0
      ? await tx.findSuppressed(projectId, [...wanted.distinctIds], [...wanted.anonymousIds])
      : NONE_SUPPRESSED;
  const stored = wanted.insertIds.length > 0 ? await tx.findInsertIds(sourceId, wanted.insertIds) : new Map<string, string | null>();
  const people = new PersonResolver(tx, projectId, jobs[0]!.receivedAt);
  await people.preload([...wanted.linkedIds], [...wanted.anonymousIds]);

  const w: Writes = { projectId, sourceId, people, room, suppressed, stored, events: [], metered: new Map(), claims: [], madeBy: new Map() };
  const all: ItemOutcome[][] = [];
  for (const [job, { items, receivedAt }] of jobs.entries()) {
    const at: JobAt = { job, receivedAt, month: monthOf(receivedAt) };
    const outcomes: ItemOutcome[] = [];
    all.push(outcomes);
    for (const item of items) {
      // Awaited only when a person must be read: most items need no trip to the store.
      const outcome = unwritten(w, item) ?? writeItem(w, item, at);
      outcomes.push(outcome instanceof Promise ? await outcome : outcome);
    }
  }

  await people.flush();
  if (people.traits.length > 0) await tx.upsertTraits(projectId, newestTraits(people.traits));
  if (w.events.length > 0) await tx.insertEvents(w.events);
  if (w.claims.length > 0) await tx.addInsertIds(sourceId, w.claims);
  for (const [month, n] of w.metered) await tx.addUsage(projectId, month, n);
  return all;
}

/** What a pass gathers as it goes through the items, and writes at its end. */
interface Writes {
  projectId: string;
  sourceId: string;
  people: PersonResolver;
  /** Room left under the plan limit, by metering month. */
  room: Map<string, number>;
  suppressed: SuppressedIds;
  /** Event ids of the insert_ids stored, by insert_id: before the pass, and by it. */
  stored: Map<string, string | null>;
  events: NewEventRow[];
  /** Items metered, by month. */
  metered: Map<string, number>;
  claims: { insertId: string; eventId: string | null }[];
  /** A person made in this pass is new only to the job that made it: its place in the pass. */
  madeBy: Map<string, number>;
}

/** The job an item came in: its place in the pass, when it arrived and the month it is metered in. */
interface JobAt {
  job: number;
  receivedAt: number;
  month: string;
}

/**
 * Room left under the plan limit, per metering month of the jobs that carry
 * metered items: read once, before the items, so that the loop over them never
 * waits on the store for it.
 */
async function roomLeft(tx: IngestTx, jobs: IngestJob[], projectId: string): Promise<Map<string, number>> {
  const limit = await tx.monthlyEventLimit(projectId);
  const room = new Map<string, number>();
  for (const j of jobs) {
    const month = monthOf(j.receivedAt);
    if (room.has(month) || !j.items.some(isMetered)) continue;
    room.set(month, limit === null ? Infinity : Math.max(0, limit - (await tx.usage(projectId, month))));
  }
  return room;
}

/** What the lookups before the items ask for, gathered in one loop over them (each list in item order, once per value). */
function lookups(jobs: IngestJob[]): { distinctIds: Set<string>; linkedIds: Set<string>; anonymousIds: Set<string>; insertIds: string[] } {
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
  return { distinctIds, linkedIds, anonymousIds, insertIds };
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

function writeItem(w: Writes, item: IngestItem, at: JobAt): ItemOutcome | Promise<ItemOutcome> {
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
function writeTrack(w: Writes, item: IngestItem<'track'>, at: JobAt): ItemOutcome | Promise<ItemOutcome> {
  const left = w.room.get(at.month)!;
  if (left <= 0) return { index: item.index, status: 'dropped', reason: 'collection_paused' };
  w.room.set(at.month, left - 1);
  w.metered.set(at.month, (w.metered.get(at.month) ?? 0) + 1);
  // A track names someone (the checks see to it): its browser person, or else its user.
  if (item.anonymousId === null) return trackEvent(w, item, at, w.people.byDistinctId(item.distinctId!));
  return w.people.byAnonymousId(item.anonymousId).then((person) => trackEvent(w, item, at, person));
}

function trackEvent(w: Writes, item: IngestItem<'track'>, at: JobAt, person: Resolved): ItemOutcome {
  const eventId = newEventId(at.receivedAt);
  w.events.push({
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
function writeIdentify(w: Writes, item: IngestItem<'identify'>, at: JobAt): ItemOutcome | Promise<ItemOutcome> {
  if (item.anonymousId === null) return identifyTraits(w, item, at, w.people.byDistinctId(item.distinctId));
  return w.people.linkToBrowserPerson(item.distinctId, item.anonymousId).then((person) => identifyTraits(w, item, at, person));
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
    w.claims.push({ insertId: item.insertId, eventId });
    // A later item with this insert_id (in another job of the batch) is a repeat of this one.
    w.stored.set(item.insertId, eventId);
  }
  if (person.isNew && !w.madeBy.has(person.id)) w.madeBy.set(person.id, at.job);
  return { index: item.index, status: 'accepted', eventId, personId: person.id, personIsNew: person.isNew && w.madeBy.get(person.id) === at.job };
}

const NONE_SUPPRESSED: SuppressedIds = { distinctIds: new Set(), personIds: new Set() };

function unique(xs: string[]): string[] {
  return [...new Set(xs)];
}
