import {
  type IngestTx,
  type KeyState,
  type NewEventRow,
  type PersonKind,
  type PersonRef,
  StoreUnavailableError,
  type SuppressedIds,
  type TraitWrite,
} from '../port.js';
import { type MemoryDatabase, type Tables, inner } from './database.js';

/** Faults a test can inject into the memory engine's writes. */
export interface MemoryFaults {
  /** An event row for which this returns true is refused, as a constraint would refuse it. */
  refuseEvent?: (row: NewEventRow) => boolean;
}

/** The person a stored person id is now (after following a merge), in `t`. */
export function currentPerson(t: Tables, projectId: string, id: string): PersonRef | undefined {
  const p = t.persons.get(projectId)?.get(id);
  if (p === undefined) return undefined;
  if (p.mergedInto === null) return { id, kind: p.kind };
  const m = t.persons.get(projectId)?.get(p.mergedInto);
  return { id: p.mergedInto, kind: m?.kind ?? p.kind };
}

/**
 * A transaction on a copy of the tables (`tables`); the store puts the copy
 * in place on commit. Only one runs at a time, so lockProject has nothing to do.
 */
export class MemoryTx implements IngestTx {
  constructor(
    public tables: Tables,
    private readonly db: MemoryDatabase,
    private readonly faults: MemoryFaults,
  ) {}

  lockProject(): void {}

  keyStates(keyIds: string[]): Map<string, KeyState> {
    const t = this.tables;
    const out = new Map<string, KeyState>();
    for (const id of keyIds) {
      const k = t.keys.get(id);
      if (k === undefined) continue;
      const source = t.sources.get(k.sourceId);
      const project = source && t.projects.get(source.projectId);
      const org = project && t.orgs.get(project.orgId);
      const ownersLive = source?.deletedAt === null && project?.deletedAt === null && org?.deletedAt === null;
      out.set(id, { revokedAt: k.revokedAt, expiresAt: k.expiresAt, ownersLive });
    }
    return out;
  }

  monthlyEventLimit(projectId: string): number | null {
    return this.tables.projects.get(projectId)?.monthlyEventLimit ?? null;
  }

  usage(projectId: string, month: string): number {
    return this.tables.usage.get(projectId)?.get(month) ?? 0;
  }

  addUsage(projectId: string, month: string, events: number): void {
    const m = inner(this.tables.usage, projectId);
    m.set(month, (m.get(month) ?? 0) + events);
  }

  findInsertIds(sourceId: string, insertIds: string[]): Map<string, string | null> {
    const stored = this.tables.insertIds.get(sourceId);
    const out = new Map<string, string | null>();
    for (const id of insertIds) if (stored?.has(id)) out.set(id, stored.get(id)!);
    return out;
  }

  addInsertIds(sourceId: string, rows: { insertId: string; eventId: string | null }[]): void {
    const stored = inner(this.tables.insertIds, sourceId);
    for (const r of rows) {
      if (stored.has(r.insertId)) throw refused(`insert_id ${r.insertId} is already stored for source ${sourceId}`);
      stored.set(r.insertId, r.eventId);
    }
  }

  findLinks(projectId: string, distinctIds: string[]): Map<string, PersonRef> {
    const links = this.tables.links.get(projectId);
    const out = new Map<string, PersonRef>();
    for (const did of distinctIds) {
      const personId = links?.get(did);
      const ref = personId === undefined ? undefined : currentPerson(this.tables, projectId, personId);
      if (ref !== undefined) out.set(did, ref);
    }
    return out;
  }

  findPersons(projectId: string, personIds: string[]): Map<string, PersonRef> {
    const out = new Map<string, PersonRef>();
    for (const id of personIds) {
      const ref = currentPerson(this.tables, projectId, id);
      if (ref !== undefined) out.set(id, ref);
    }
    return out;
  }

  createPersons(projectId: string, persons: { id: string; kind: PersonKind }[], createdAt: number): void {
    const m = inner(this.tables.persons, projectId);
    for (const p of persons) {
      if (m.has(p.id)) throw refused(`person ${p.id} already exists`);
      m.set(p.id, { kind: p.kind, mergedInto: null, createdAt });
    }
  }

  addLinks(projectId: string, links: { distinctId: string; personId: string }[]): void {
    const m = inner(this.tables.links, projectId);
    for (const l of links) {
      if (m.has(l.distinctId)) throw refused(`distinct_id ${l.distinctId} is already linked`);
      m.set(l.distinctId, l.personId);
    }
  }

  mergePerson(projectId: string, from: string, into: string): void {
    if (from === into) return;
    const t = this.tables;
    for (const [id, p] of inner(t.persons, projectId)) if (id === from || p.mergedInto === from) p.mergedInto = into;
    const links = inner(t.links, projectId);
    for (const [did, personId] of links) if (personId === from) links.set(did, into);
    const traits = inner(t.traits, projectId);
    const moved = traits.get(from);
    traits.delete(from);
    // On a tie the person merged into keeps its value.
    for (const [key, row] of moved ?? []) this.setTrait(projectId, into, key, row, (old) => row.setAt > old.setAt);
  }

  upsertTraits(projectId: string, traits: TraitWrite[]): void {
    for (const w of traits) this.setTrait(projectId, w.personId, w.key, { value: w.value, setAt: w.setAt }, (old) => w.setAt >= old.setAt);
  }

  findSuppressed(projectId: string, distinctIds: string[], personIds: string[]): SuppressedIds {
    const ids = this.tables.suppressed.get(projectId);
    const persons = this.tables.suppressedPersons.get(projectId);
    return { distinctIds: new Set(distinctIds.filter((d) => ids?.has(d))), personIds: new Set(personIds.filter((p) => persons?.has(p))) };
  }

  insertEvents(rows: NewEventRow[]): void {
    for (const r of rows) {
      if ((r.event as string | null) === null) throw refused('an event row has no event name');
      if (this.faults.refuseEvent?.(r)) throw refused('the test refused this event row');
      this.tables.events.push({ ...r, seq: this.tables.events.length + 1 });
    }
  }

  async savepoint<T>(fn: () => Promise<T>): Promise<T> {
    const saved = this.db.copy(this.tables);
    try {
      return await fn();
    } catch (e) {
      this.tables = saved;
      throw e;
    }
  }

  private setTrait(projectId: string, personId: string, key: string, row: { value: string; setAt: number }, wins: (old: { setAt: number }) => boolean): void {
    const m = inner(inner(this.tables.traits, projectId), personId);
    const old = m.get(key);
    if (old === undefined || wins(old)) m.set(key, { value: row.value, setAt: row.setAt });
  }
}

function refused(message: string): StoreUnavailableError {
  return new StoreUnavailableError(`The memory store refused the write: ${message}.`, { refused: true });
}
