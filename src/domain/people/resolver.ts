import type { PassState, PassWrites, PersonRef, TraitWrite } from '../../stores/port.js';
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
  /** Traits waiting to be written; a merge re-points them. */
  readonly traits: TraitWrite[] = [];

  constructor(
    read: Pick<PassState, 'links' | 'persons'>,
    private readonly out: Pick<PassWrites, 'persons' | 'links' | 'merges'>,
  ) {
    this.links = read.links;
    this.persons = read.persons;
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
    this.out.links.push({ distinctId, personId: ref.id });
  }

  private merge(from: string, into: string): void {
    this.out.merges.push({ from, into });
    const intoRef = this.persons.get(into) ?? { id: into, kind: 'browser' as const };
    for (const map of [this.links, this.persons]) {
      for (const [k, ref] of map) if (ref.id === from) map.set(k, intoRef);
    }
    for (const t of this.traits) if (t.personId === from) t.personId = into;
  }
}

/**
 * Keeps one write per (person, key): the newest by item timestamp, the later
 * one on a tie. Stores then apply the same rule against what they hold.
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
