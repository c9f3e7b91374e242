import type { ErasedPerson, ErasureStore, PendingErasure, PersonLookup } from '../stores/port.js';

/**
 * Erasing a person, on request: its links, traits, the persons merged into
 * it, and every event of any of them in every source of the project.
 *
 * The links and persons go first, in one transaction under the project lock
 * ingestion takes, which also records the suppression when asked; the events
 * stored until then are deleted after, in short steps. An item for the
 * person that arrives meanwhile is therefore either stored before that
 * transaction (and deleted with the rest) or ingested after it: dropped as
 * `suppressed`, or given a new person.
 *
 * That first transaction also records the erasure as pending: the persons
 * whose events go, and the newest event stored until then. Each step of
 * deletion touches the record, and the record goes once every event is
 * deleted. A process that stops in between (a crash, a lost database) leaves
 * the record, and finishErasure, run on it once it is stale
 * (domain/retention.ts), deletes the rest: nothing of the person can be left
 * behind for good, though its persons and links are gone and it can no
 * longer be looked up.
 *
 * Null when the project has no such person.
 */
export async function erasePerson(
  store: ErasureStore,
  projectId: string,
  lookup: PersonLookup,
  opts: { suppress: boolean; now: number },
): Promise<ErasedPerson | null> {
  const forgotten = await store.erasureTransaction(async (tx) => {
    await tx.lockProject(projectId);
    const personId = await tx.currentPerson(projectId, lookup);
    if (personId === null) return null;
    // Events carry the person they were stored for: the persons merged into this one are erased with it.
    const personIds = [personId, ...(await tx.mergedInto(projectId, personId))];
    const distinctIds = await tx.linkedIds(projectId, personIds);
    // Both kinds of id are suppressed (an item may name a person id as its
    // anonymous_id), each naming the erased person, so that lifting one finds
    // the others of its erasure.
    if (opts.suppress) await tx.suppress(projectId, personId, { distinctIds, personIds }, opts.now);
    await tx.removePersons(projectId, personIds, distinctIds);
    return { personId, distinctIds, pending: await tx.recordPending(projectId, personIds) };
  });
  if (forgotten === null) return null;
  const { eventsDeleted } = await finishErasure(store, forgotten.pending);
  return { personId: forgotten.personId, distinctIds: forgotten.distinctIds, eventsDeleted, suppressed: opts.suppress };
}

/**
 * Step two of an erasure: deletes its events in short steps, then drops its
 * record. Once `stopping()` is true no further step starts, and the record
 * stays pending (`done` is false).
 */
export async function finishErasure(
  store: Pick<ErasureStore, 'deleteErasedEvents' | 'endErasure'>,
  e: PendingErasure,
  opts: { stopping?: () => boolean } = {},
): Promise<{ eventsDeleted: number; done: boolean }> {
  const r = await store.deleteErasedEvents(e, opts);
  if (r.done) await store.endErasure(e.id);
  return r;
}

/**
 * Lets items for the id be stored again; false when it was not suppressed.
 * A distinct_id takes the person ids erased with it along (its person may
 * come back whole, browser key and all); the other distinct_ids of that
 * erasure stay suppressed. A person id lifts the person ids of its erasure
 * (the person and those merged into it) and no distinct_id.
 */
export function unsuppress(store: ErasureStore, projectId: string, lookup: PersonLookup): Promise<boolean> {
  return store.erasureTransaction(async (tx) => {
    let erasure: string | null;
    if ('distinctId' in lookup) {
      const lifted = await tx.liftDistinctId(projectId, lookup.distinctId);
      if (lifted === null) return false;
      erasure = lifted.erasedPersonId;
    } else {
      erasure = await tx.erasureOfPersonId(projectId, lookup.personId);
      if (erasure === null) return false;
    }
    // null: a distinct_id suppressed before person ids were, with no person to lift.
    if (erasure !== null) await tx.liftPersonIdsOf(projectId, erasure);
    return true;
  });
}
