import type { IngestTx, PersonKind, PersonRef, TraitWrite } from '../../stores/port.js';
import { newPersonId } from '../ids.js';

export interface Resolved {
  id: string;
  isNew: boolean;
}

/**
 * Resolves the people of one job (or one admin command) inside its transaction.
 * It reads every id it will need in two bulk lookups, decides in memory, and
 * writes new persons and links in bulk; only a merge, which is rare, writes
 * at once. The caller holds the project lock, so no other writer can link the
 * same distinct_id meanwhile.
 */
export class PersonResolver {
  private readonly links = new Map<string, PersonRef>();
  private readonly persons = new Map<string, PersonRef>();
  private readonly created = new Set<string>();
  /** Person ids already looked up, found or not: never asked for twice. */
  private readonly looked = new Set<string>();
  private pendingPersons: { id: string; kind: PersonKind }[] = [];
  private pendingLinks = new Map<string, string>();
  /** Traits waiting to be written; a merge re-points them. */
  readonly traits: TraitWrite[] = [];

  constructor(
    private readonly tx: IngestTx,
    private readonly projectId: string,
    private readonly now: number,
  ) {}

  /** Loads the links and persons the job names, in two round trips. */
  async preload(distinctIds: string[], personIds: string[]): Promise<void> {
    if (distinctIds.length > 0) {
      for (const [did, ref] of await this.tx.findLinks(this.projectId, distinctIds)) this.links.set(did, ref);
    }
    if (personIds.length > 0) {
      for (const [id, ref] of await this.tx.findPersons(this.projectId, personIds)) this.persons.set(id, ref);
      for (const id of personIds) this.looked.add(id);
    }
  }

  /** The person behind a browser person key, recorded as a browser person if unseen. */
  async byAnonymousId(anonymousId: string): Promise<Resolved> {
    let ref = this.persons.get(anonymousId);
    if (ref === undefined && !this.looked.has(anonymousId)) {
      ref = (await this.tx.findPersons(this.projectId, [anonymousId])).get(anonymousId);
      this.looked.add(anonymousId);
    }
    if (ref === undefined) {
      ref = { id: anonymousId, kind: 'browser' };
      this.create(ref);
    }
    this.persons.set(anonymousId, ref);
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
  async linkToBrowserPerson(distinctId: string, anonymousId: string): Promise<Resolved> {
    const browser = await this.byAnonymousId(anonymousId);
    const current = this.links.get(distinctId);
    if (current === undefined) {
      this.link(distinctId, { id: browser.id, kind: this.persons.get(anonymousId)!.kind });
      return browser;
    }
    if (current.id === browser.id) return browser;
    if (current.kind === 'server') {
      await this.merge(current.id, browser.id);
      return browser;
    }
    return { id: current.id, isNew: this.created.has(current.id) };
  }

  /** Writes the persons and links decided so far. */
  async flush(): Promise<void> {
    if (this.pendingPersons.length > 0) {
      await this.tx.createPersons(this.projectId, this.pendingPersons, this.now);
      this.pendingPersons = [];
    }
    if (this.pendingLinks.size > 0) {
      const links = [...this.pendingLinks].map(([distinctId, personId]) => ({ distinctId, personId }));
      await this.tx.addLinks(this.projectId, links);
      this.pendingLinks = new Map();
    }
  }

  private create(ref: PersonRef): void {
    this.created.add(ref.id);
    this.pendingPersons.push({ id: ref.id, kind: ref.kind });
  }

  private link(distinctId: string, ref: PersonRef): void {
    this.links.set(distinctId, ref);
    this.pendingLinks.set(distinctId, ref.id);
  }

  private async merge(from: string, into: string): Promise<void> {
    await this.flush();
    await this.tx.mergePerson(this.projectId, from, into);
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
