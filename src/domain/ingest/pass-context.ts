import type { PassWrites, SuppressedIds } from '../../stores/port.js';
import type { PersonResolver, Resolved } from '../people/resolver.js';
import type { CommonFields } from '../items/kind.js';
import type { ItemEffect, ItemOutcome } from './job.js';

/**
 * What an ingest pass (pass.ts) gathers as it goes through the items, and
 * writes at its end: what each item type's `write` (src/domain/items) is
 * given.
 */
export interface Writes {
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
export interface JobAt {
  job: number;
  receivedAt: number;
  month: string;
}

/** The outcome of an item written, whatever its type; its insert_id is claimed. */
export function accepted(
  w: Writes,
  item: Pick<CommonFields, 'index' | 'insertId'>,
  at: JobAt,
  eventId: string | null,
  person: Resolved | null,
  effect?: ItemEffect,
): ItemOutcome {
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
