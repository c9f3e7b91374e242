import { type IngestTx, type PassQuery, type PassWrites, noPassWrites } from '../../stores/port.js';
import { keyWorks } from '../keys.js';
import { monthOf } from '../month.js';
import { groupKeyOf } from '../groups.js';
import { PersonResolver, firstSetOnce, newestTraits } from '../people/resolver.js';
import type { PassReads } from '../items/kind.js';
import { type IngestItem, KINDS } from './item.js';
import type { JobAt, Writes } from './pass-context.js';
import { writtenOutcomes } from '../outcomes/written.js';
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
    groupTypes: new Set(state.groupTypes), groups: new Set(state.groups.map((g) => groupKeyOf(g.groupType, g.groupKey))), groupTraits: [],
  };
  const written: ItemOutcome[][] = [];
  for (const [job, { items, receivedAt }] of jobs.entries()) {
    const at: JobAt = { job, receivedAt, month: monthOf(receivedAt) };
    const outcomes: ItemOutcome[] = [];
    written.push(outcomes);
    for (const item of items) outcomes.push(unwritten(w, item) ?? KINDS[item.type].write(w, item, at));
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
  const reads: PassReads = { groups: new Map() };
  for (const j of jobs) {
    for (const i of j.items) {
      const kind = KINDS[i.type];
      if (i.distinctId !== null) {
        distinctIds.add(i.distinctId);
        if (kind.linksDistinctId(i)) linkedIds.add(i.distinctId);
      }
      if (i.anonymousId !== null) anonymousIds.add(i.anonymousId);
      if (i.insertId !== null) insertIds.push(i.insertId);
      const other = kind.otherId(i);
      if (other !== null) {
        // Suppressed with its person as any distinct_id is, and its person looked up.
        distinctIds.add(other);
        linkedIds.add(other);
        previousIds.add(other);
      }
      kind.read?.(i, reads);
    }
  }
  const { groups } = reads;
  const personIds = [...anonymousIds];
  return {
    projectId, sourceId, keyIds: unique(jobs.map((j) => j.keyId)), months: metered(jobs), insertIds, linkedIds: [...linkedIds], personIds,
    suppressed: { distinctIds: [...distinctIds], personIds }, withOtherIds: [...previousIds], groupTypes: groups.size > 0, groups: [...groups.values()],
  };
}

/** The metering months of the jobs that carry metered items, once each. */
function metered(jobs: IngestJob[]): string[] {
  const months = new Set<string>();
  for (const j of jobs) if (j.items.some((i) => KINDS[i.type].metered)) months.add(monthOf(j.receivedAt));
  return [...months];
}

/** The outcome of an item not written, whatever its type: its person erased, or its insert_id stored already. */
function unwritten(w: Writes, item: IngestItem): ItemOutcome | null {
  const suppressed =
    (item.distinctId !== null && w.suppressed.distinctIds.has(item.distinctId)) ||
    (item.anonymousId !== null && w.suppressed.personIds.has(item.anonymousId)) ||
    isSuppressedId(w, KINDS[item.type].otherId(item));
  if (suppressed) {
    return { index: item.index, status: 'dropped', reason: 'suppressed' };
  }
  if (item.insertId !== null && w.stored.has(item.insertId)) return { index: item.index, status: 'duplicate', eventId: w.stored.get(item.insertId) ?? null };
  return null;
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

function isSuppressedId(w: Writes, id: string | null): boolean {
  return id !== null && w.suppressed.distinctIds.has(id);
}

function unique(xs: string[]): string[] {
  return [...new Set(xs)];
}
