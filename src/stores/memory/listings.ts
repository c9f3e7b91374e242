import type { Org, Project, Source, StoredEvent } from '../port.js';
import type { DayCount, ListingStore, PersonCursor, PersonListing } from '../port-console.js';
import { type MemoryDatabase, byteOrder, storedEvent } from './database.js';

const DAY_MS = 86_400_000;
/** Distinct ids a listed person shows. */
const SHOWN_IDS = 3;

/** By name, then id, in byte order, as the other engines sort. */
const byNameThenId = (a: { name: string; id: string }, b: { name: string; id: string }): number =>
  byteOrder(a.name, b.name) || byteOrder(a.id, b.id);

/** Lists and summaries for the console and the list commands, in memory. */
export class MemoryListings implements ListingStore {
  constructor(private readonly db: MemoryDatabase) {}

  private get t() {
    return this.db.tables;
  }

  async listOrgs(): Promise<Org[]> {
    return [...this.t.orgs.values()]
      .filter((o) => o.deletedAt === null)
      .sort(byNameThenId)
      .map(({ id, name, createdAt }) => ({ id, name, createdAt }));
  }

  async listProjects(orgId: string | null): Promise<Project[]> {
    return [...this.t.projects.values()]
      .filter((p) => (orgId === null || p.orgId === orgId) && this.liveProject(p.id))
      .sort(byNameThenId)
      .map(({ deletedAt: _, ...p }) => ({ ...p }));
  }

  async listSources(projectId: string): Promise<Source[]> {
    if (!this.liveProject(projectId)) return [];
    return [...this.t.sources.values()]
      .filter((s) => s.projectId === projectId && s.deletedAt === null)
      .sort(byNameThenId)
      .map(({ deletedAt: _, ...s }) => ({ ...s }));
  }

  async eventsPerDay(projectId: string, from: number, to: number): Promise<DayCount[]> {
    const byDay = new Map<number, number>();
    for (const e of this.t.events) {
      if (e.projectId !== projectId || e.timestamp < from || e.timestamp >= to) continue;
      const day = Math.floor(e.timestamp / DAY_MS);
      byDay.set(day, (byDay.get(day) ?? 0) + 1);
    }
    return [...byDay]
      .sort((a, b) => a[0] - b[0])
      .map(([day, events]) => ({ day: new Date(day * DAY_MS).toISOString().slice(0, 10), events }));
  }

  async searchDistinctIds(projectId: string, prefix: string, limit: number): Promise<{ distinctId: string; personId: string }[]> {
    const persons = this.t.persons.get(projectId);
    return [...(this.t.links.get(projectId) ?? [])]
      .filter(([distinctId]) => distinctId.startsWith(prefix))
      .sort(([a], [b]) => byteOrder(a, b))
      .slice(0, limit)
      .map(([distinctId, personId]) => ({ distinctId, personId: persons?.get(personId)?.mergedInto ?? personId }));
  }

  async listPersons(projectId: string, limit: number, after: PersonCursor | null): Promise<{ persons: PersonListing[]; next: PersonCursor | null }> {
    const persons = this.t.persons.get(projectId) ?? new Map();
    const newestFirst = (a: PersonCursor, b: PersonCursor): number => b.createdAt - a.createdAt || byteOrder(b.id, a.id);
    const rows = [...persons]
      .filter(([, p]) => p.mergedInto === null)
      .map(([id, p]) => ({ id, createdAt: p.createdAt }))
      .filter((p) => after === null || newestFirst(after, p) < 0)
      .sort(newestFirst);
    const page = rows.slice(0, limit);
    const links = [...(this.t.links.get(projectId) ?? [])];
    const listed = page.map((p) => {
      const owners = new Set([p.id, ...[...persons].filter(([, m]) => m.mergedInto === p.id).map(([id]) => id)]);
      const ids = links.filter(([, personId]) => owners.has(personId)).map(([d]) => d).sort(byteOrder);
      return { ...p, distinctIds: ids.slice(0, SHOWN_IDS), moreIds: ids.length > SHOWN_IDS };
    });
    const last = page.at(-1);
    return { persons: listed, next: rows.length > limit && last !== undefined ? { createdAt: last.createdAt, id: last.id } : null };
  }

  async personEvents(projectId: string, personId: string, limit: number, scan: number): Promise<StoredEvent[]> {
    const t = this.t;
    const ofProject = t.events.filter((e) => e.projectId === projectId);
    return ofProject
      .slice(-scan)
      .map((e) => ({ seq: e.seq, event: storedEvent(t, e) }))
      .filter((e) => e.event.personId === personId)
      .sort((a, b) => b.event.timestamp - a.event.timestamp || b.seq - a.seq)
      .slice(0, limit)
      .map((e) => e.event);
  }

  /** A project that is not deleted, of an organization that is not. */
  private liveProject(id: string): boolean {
    const p = this.t.projects.get(id);
    return p !== undefined && p.deletedAt === null && this.t.orgs.get(p.orgId)?.deletedAt === null;
  }
}
