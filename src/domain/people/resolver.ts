import type { Membership, PassState, PassWrites, PersonRef, TraitWrite } from '../../stores/port.js';
import { newPersonId } from '../ids.js';

export interface Resolved {
  id: string;
  isNew: boolean;
}

/**
 * Resolves the people of one pass (or one admin command) inside its
 * transaction, in memory: it starts from the links and persons the pass read
 * (PassState), and puts what it decides into the pass's write bundle: persons
 * created, links added, merges in the order made. The caller holds the
 * project lock, so no other writer can link the same distinct_id meanwhile.
 *
 * Every distinct_id and anonymous_id it is asked about must have been in the
 * read (PassQuery.linkedIds, personIds): one not found there is taken as
 * unseen.
 *
 * A merge is written after all the persons and links of the bundle
 * (PASS_WRITE_ORDER), and re-points the links written before it: those made
 * before the merge point at `from` and are re-pointed with the stored ones;
 * those made after it already point at `into`, here, in memory, as the
 * traits waiting are.
 */
export class PersonResolver {
  private readonly links: Map<string, PersonRef>;
  private readonly persons: Map<string, PersonRef>;
  private readonly created = new Set<string>();
  /** Traits waiting to be written (a null value: unset); a merge re-points them. */
  readonly traits: TraitWrite[] = [];
  /** Set-once traits waiting, the first per (person, key); a merge re-points them. */
  readonly setOnce: TraitWrite[] = [];
  /** Group memberships waiting; a merge re-points them. */
  readonly members: Membership[] = [];
  /**
   * Persons known to hold more distinct_ids than one named: those the read
   * found with another id (PassState.withOtherIds, by the id asked), and those
   * this pass linked a second id to or merged another person into.
   */
  private readonly manyIds = new Set<string>();
  private readonly idsLinkedHere = new Map<string, string>();
  private readonly withOtherIds: ReadonlySet<string>;

  constructor(
    read: Pick<PassState, 'links' | 'persons'> & Partial<Pick<PassState, 'withOtherIds'>>,
    private readonly out: Pick<PassWrites, 'persons' | 'links' | 'merges'>,
  ) {
    this.links = read.links;
    this.persons = read.persons;
    this.withOtherIds = read.withOtherIds ?? new Set();
  }

  /**
   * An alias: `previousId` means the person of `distinctId` from now on.
   * An id without a person is linked to the other's (made if need be); two
   * persons are merged, the person of previousId into the person of
   * distinctId, unless the person of previousId is known by another
   * distinct_id too: alias never merges two identified people ('illegal').
   */
  alias(distinctId: string, previousId: string): { person: Resolved; effect: 'linked' | 'merged' | 'none' } | 'illegal' {
    const target = this.links.get(distinctId);
    const previous = this.links.get(previousId);
    if (previous === undefined) {
      const person = this.byDistinctId(distinctId);
      this.link(previousId, this.links.get(distinctId)!);
      return { person, effect: 'linked' };
    }
    if (target === undefined) {
      this.link(distinctId, previous);
      return { person: { id: previous.id, isNew: this.created.has(previous.id) }, effect: 'linked' };
    }
    if (target.id === previous.id) return { person: { id: target.id, isNew: this.created.has(target.id) }, effect: 'none' };
    if (this.knownByOthers(previous.id, previousId)) return 'illegal';
    this.mergeRefs(previous, target);
    return { person: { id: target.id, isNew: this.created.has(target.id) }, effect: 'merged' };
  }

  /** Whether the person is known by a distinct_id other than `id`, as read or as linked in this pass. */
  private knownByOthers(personId: string, id: string): boolean {
    if (this.manyIds.has(personId) || this.withOtherIds.has(id)) return true;
    for (const [other, owner] of this.idsLinkedHere) if (owner === personId && other !== id) return true;
    return false;
  }

  /** The person behind a browser person key, recorded as a browser person if unseen. */
  byAnonymousId(anonymousId: string): Resolved {
    let ref = this.persons.get(anonymousId);
    if (ref === undefined) {
      ref = { id: anonymousId, kind: 'browser' };
      this.create(ref);
      this.persons.set(anonymousId, ref);
    }
    return { id: ref.id, isNew: this.created.has(ref.id) };
  }

  /** The person a distinct_id is linked to, or a new server person linked to it. */
  byDistinctId(distinctId: string): Resolved {
    let ref = this.links.get(distinctId);
    if (ref === undefined) {
      ref = { id: newPersonId(), kind: 'server' };
      this.create(ref);
      this.link(distinctId, ref);
    }
    return { id: ref.id, isNew: this.created.has(ref.id) };
  }

  /**
   * Links a distinct_id to a browser person. A server person already holding
   * the id is merged into it; an id already held by another browser person
   * stays with that person, whose record is returned.
   */
  linkToBrowserPerson(distinctId: string, anonymousId: string): Resolved {
    const browser = this.byAnonymousId(anonymousId);
    const current = this.links.get(distinctId);
    if (current === undefined) {
      this.link(distinctId, { id: browser.id, kind: this.persons.get(anonymousId)!.kind });
      return browser;
    }
    if (current.id === browser.id) return browser;
    if (current.kind === 'server') {
      this.merge(current.id, browser.id);
      return browser;
    }
    return { id: current.id, isNew: this.created.has(current.id) };
  }

  private create(ref: PersonRef): void {
    this.created.add(ref.id);
    this.out.persons.push({ id: ref.id, kind: ref.kind });
  }

  private link(distinctId: string, ref: PersonRef): void {
    this.links.set(distinctId, ref);
    this.idsLinkedHere.set(distinctId, ref.id);
    this.out.links.push({ distinctId, personId: ref.id });
  }

  private merge(from: string, into: string): void {
    this.mergeRefs({ id: from, kind: 'server' }, this.persons.get(into) ?? { id: into, kind: 'browser' as const });
  }

  /** Folds `from` into `into`: every id, trait and membership waiting that names `from` names `into` from now on. */
  private mergeRefs(from: PersonRef, into: PersonRef): void {
    this.out.merges.push({ from: from.id, into: into.id });
    // The person merged into now holds the other's ids as well as its own.
    this.manyIds.add(into.id);
    for (const map of [this.links, this.persons]) {
      for (const [k, ref] of map) if (ref.id === from.id) map.set(k, into);
    }
    for (const [k, owner] of this.idsLinkedHere) if (owner === from.id) this.idsLinkedHere.set(k, into.id);
    for (const list of [this.traits, this.setOnce, this.members]) for (const t of list) if (t.personId === from.id) t.personId = into.id;
  }
}

/**
 * Keeps one write per (person, key): the newest by item timestamp, the later
 * one on a tie, an unset (a null value) as much as a value. Stores then apply
 * the same rule against what they hold.
 */
export function newestTraits(traits: TraitWrite[]): TraitWrite[] {
  const best = new Map<string, TraitWrite>();
  for (const t of traits) {
    const k = `${t.personId}\u0000${t.key}`;
    const prev = best.get(k);
    if (prev === undefined || t.setAt >= prev.setAt) best.set(k, t);
  }
  return [...best.values()];
}

/**
 * Keeps the first set-once write per (person, key), and none where this pass
 * also sets or unsets the key: a set-once value never overwrites one, and an
 * unset at or after it removes it (one before it is already past).
 */
export function firstSetOnce(setOnce: TraitWrite[], traits: TraitWrite[]): TraitWrite[] {
  // Most passes have none: no map of their traits is built for nothing.
  if (setOnce.length === 0) return [];
  const decided = new Map<string, TraitWrite>();
  for (const t of traits) decided.set(`${t.personId}\u0000${t.key}`, t);
  const first = new Map<string, TraitWrite>();
  for (const t of setOnce) {
    const k = `${t.personId}\u0000${t.key}`;
    const other = decided.get(k);
    if (other !== undefined && (other.value !== null || other.setAt >= t.setAt)) continue;
    if (!first.has(k)) first.set(k, t);
  }
  return [...first.values()];
}
