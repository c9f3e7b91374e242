import { type IngestTx, type NewEventRow, type PassQuery, type PassWrites, type SuppressedIds, noPassWrites } from '../../stores/port.js';
import { newEventId } from '../ids.js';
import { keyWorks } from '../keys.js';
import { monthOf } from '../month.js';
import { MAX_GROUP_TYPES, groupKeyOf } from '../groups.js';
import { PersonResolver, type Resolved, firstSetOnce, newestTraits } from '../people/resolver.js';
import { type IngestItem, unhandledType } from './item.js';
import { writtenOutcomes } from '../outcomes/written.js';
import { type IngestJob, type ItemEffect, type ItemOutcome, KeyNoLongerWorksError } from './job.js';

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
    groupTypes: new Set(state.groupTypes), groups: new Set(state.groups.map((g) => groupKeyOf(g.groupType, g.groupKey))), groupTraits: [],
  };
  const written: ItemOutcome[][] = [];
  for (const [job, { items, receivedAt }] of jobs.entries()) {
    const at: JobAt = { job, receivedAt, month: monthOf(receivedAt) };
    const outcomes: ItemOutcome[] = [];
    written.push(outcomes);
    for (const item of items) outcomes.push(unwritten(w, item) ?? writeItem(w, item, at));
  }
  out.traits = newestTraits(w.people.traits);
  out.setOnce = firstSetOnce(w.people.setOnce, out.traits);
  out.groupTraits = newestGroupTraits(w.groupTraits);
  out.members = w.people.members;
  // Counted with the write: exact, and part of the same commit (a dry run's go back with the rest).
  out.outcomes = writtenOutcomes(jobs, written);
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
  const previousIds = new Set<string>();
  const groups = new Map<string, { groupType: string; groupKey: string }>();
  for (const j of jobs) {
    for (const i of j.items) {
      if (i.distinctId !== null) {
        distinctIds.add(i.distinctId);
        if (namesPersonByDistinctId(i)) linkedIds.add(i.distinctId);
      }
      if (i.anonymousId !== null) anonymousIds.add(i.anonymousId);
      if (i.insertId !== null) insertIds.push(i.insertId);
      if (i.type === 'alias') {
        // The previous id is suppressed with its person as any distinct_id is, and its person is looked up.
        distinctIds.add(i.previousId);
        linkedIds.add(i.previousId);
        previousIds.add(i.previousId);
      } else if (i.type === 'group') {
        groups.set(groupKeyOf(i.groupType, i.groupKey), { groupType: i.groupType, groupKey: i.groupKey });
      }
    }
  }
  const personIds = [...anonymousIds];
  return {
    projectId, sourceId, keyIds: unique(jobs.map((j) => j.keyId)), months: metered(jobs), insertIds, linkedIds: [...linkedIds], personIds,
    suppressed: { distinctIds: [...distinctIds], personIds }, withOtherIds: [...previousIds], groupTypes: groups.size > 0, groups: [...groups.values()],
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
  /** The project's group types: as read, and those this pass adds. */
  groupTypes: Set<string>;
  /** Groups that exist (groupKeyOf): as read, and those this pass makes. */
  groups: Set<string>;
  groupTraits: PassWrites['groupTraits'];
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
  const suppressed =
    (item.distinctId !== null && w.suppressed.distinctIds.has(item.distinctId)) ||
    (item.anonymousId !== null && w.suppressed.personIds.has(item.anonymousId)) ||
    (item.type === 'alias' && w.suppressed.distinctIds.has(item.previousId));
  if (suppressed) {
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
      return writeGroup(w, item, at);
    case 'alias':
      return writeAlias(w, item, at);
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
  // An unset is a trait write of no value, ordered by timestamp as any (newestTraits).
  for (const key of item.unset ?? []) w.people.traits.push({ personId: person.id, key, value: null, setAt: item.timestamp });
  for (const [key, value] of Object.entries(item.setOnce ?? {})) {
    w.people.setOnce.push({ personId: person.id, key, value: JSON.stringify(value), setAt: item.timestamp });
  }
  return accepted(w, item, at, null, person);
}

/**
 * A group item sets the group's traits and makes its sender a member. A
 * sixth group type of the project is refused: the types are read under the
 * project lock, so two servers cannot each add a fifth.
 */
function writeGroup(w: Writes, item: IngestItem<'group'>, at: JobAt): ItemOutcome {
  if (!w.groupTypes.has(item.groupType)) {
    if (w.groupTypes.size >= MAX_GROUP_TYPES) {
      return {
        index: item.index,
        status: 'refused',
        code: 'too_many_group_types',
        field: 'group_type',
        message: `This project has ${MAX_GROUP_TYPES} group types already (${[...w.groupTypes].sort().join(', ')}); a project has at most ${MAX_GROUP_TYPES}. Send one of them as "group_type".`,
      };
    }
    w.groupTypes.add(item.groupType);
    w.out.groupTypes.push(item.groupType);
  }
  const key = groupKeyOf(item.groupType, item.groupKey);
  const groupIsNew = !w.groups.has(key);
  if (groupIsNew) {
    w.groups.add(key);
    w.out.groups.push({ groupType: item.groupType, groupKey: item.groupKey });
  }
  for (const [k, value] of Object.entries(item.properties)) {
    w.groupTraits.push({ groupType: item.groupType, groupKey: item.groupKey, key: k, value: JSON.stringify(value), setAt: item.timestamp });
  }
  const effect: ItemEffect = { kind: 'group', groupIsNew };
  if (item.distinctId === null) return accepted(w, item, at, null, null, effect);
  const person = w.people.byDistinctId(item.distinctId);
  w.people.members.push({ groupType: item.groupType, groupKey: item.groupKey, personId: person.id });
  return accepted(w, item, at, null, person, effect);
}

/** An alias links or merges as PersonResolver.alias decides; an illegal merge is refused and changes nothing. */
function writeAlias(w: Writes, item: IngestItem<'alias'>, at: JobAt): ItemOutcome {
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

/** Keeps one write per (group, key): the newest by item timestamp, the later one on a tie. */
function newestGroupTraits(traits: PassWrites['groupTraits']): PassWrites['groupTraits'] {
  const best = new Map<string, PassWrites['groupTraits'][number]>();
  for (const t of traits) {
    const k = `${groupKeyOf(t.groupType, t.groupKey)}\u0000${t.key}`;
    const prev = best.get(k);
    if (prev === undefined || t.setAt >= prev.setAt) best.set(k, t);
  }
  return [...best.values()];
}

/** The outcome of an item written, whatever its type; its insert_id is claimed. */
function accepted(w: Writes, item: IngestItem, at: JobAt, eventId: string | null, person: Resolved | null, effect?: ItemEffect): ItemOutcome {
  if (item.insertId !== null) {
    w.out.insertIds.push({ insertId: item.insertId, eventId });
    // A later item with this insert_id (in another job of the batch) is a repeat of this one.
    w.stored.set(item.insertId, eventId);
  }
  if (person === null) return { index: item.index, status: 'accepted', eventId, personId: null, personIsNew: false, effect };
  if (person.isNew && !w.madeBy.has(person.id)) w.madeBy.set(person.id, at.job);
  const outcome: ItemOutcome = { index: item.index, status: 'accepted', eventId, personId: person.id, personIsNew: person.isNew && w.madeBy.get(person.id) === at.job };
  if (effect !== undefined) outcome.effect = effect;
  return outcome;
}

function unique(xs: string[]): string[] {
  return [...new Set(xs)];
}
