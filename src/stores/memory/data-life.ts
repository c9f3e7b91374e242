import { type ErasedPerson, type EventCursor, type EventPage, type EventPageQuery, type EventPages, type ExpiryStep, type PersonLookup, type StoredEvent, retentionCutoff } from '../port.js';
import { type EventRow, type MemoryDatabase, type Tables, inner } from './database.js';
import { currentPerson } from './memory-tx.js';

const byteOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** An event row as the port shows it, its person followed one merge. */
function shown(t: Tables, e: EventRow): StoredEvent {
  return {
    id: e.id, event: e.event, distinctId: e.distinctId, anonymousId: e.anonymousId,
    personId: t.persons.get(e.projectId)?.get(e.personId)?.mergedInto ?? e.personId,
    sessionId: e.sessionId, timestamp: e.timestamp, receivedAt: e.receivedAt, insertId: e.insertId,
    properties: JSON.parse(e.properties) as Record<string, unknown>,
  };
}

/** Keyset pages over the events array, sorted per page: plainly correct, for tests and reference. */
export class MemoryEventPages implements EventPages {
  constructor(private readonly db: MemoryDatabase) {}

  async eventPage(q: EventPageQuery): Promise<EventPage> {
    const t = this.db.tables;
    const sign = q.order === 'asc' ? 1 : -1;
    const rows = t.events
      .filter(
        (e) =>
          e.sourceId === q.sourceId &&
          (q.since === undefined || e.timestamp >= q.since) &&
          (q.until === undefined || e.timestamp < q.until) &&
          (q.event === undefined || e.event === q.event) &&
          (q.distinctId === undefined || e.distinctId === q.distinctId) &&
          (q.after === null || sign * (e.timestamp - q.after.timestamp || e.seq - q.after.seq) > 0),
      )
      .sort((a, b) => sign * (a.timestamp - b.timestamp || a.seq - b.seq))
      .slice(0, Math.max(0, q.limit));
    const last = rows.at(-1);
    return { events: rows.map((e) => shown(t, e)), next: rows.length === q.limit && last !== undefined ? { timestamp: last.timestamp, seq: last.seq } : null };
  }

  async eventCursor(sourceId: string, eventId: string): Promise<EventCursor | null> {
    const id = eventId.toLowerCase();
    const e = this.db.tables.events.find((r) => r.id === id && r.sourceId === sourceId);
    return e === undefined ? null : { timestamp: e.timestamp, seq: e.seq };
  }

  async sourceIdsOf(projectId: string): Promise<string[]> {
    return [...this.db.tables.sources.values()].filter((s) => s.projectId === projectId).map((s) => s.id).sort(byteOrder);
  }
}

/** Removes events (and frees their insert_ids) in the tables given; returns how many went. */
function dropEvents(t: Tables, doomed: (e: EventRow) => boolean, limit = Infinity): number {
  let n = 0;
  t.events = t.events.filter((e) => {
    if (n >= limit || !doomed(e)) return true;
    n++;
    if (e.insertId !== null) t.insertIds.get(e.sourceId)?.delete(e.insertId);
    return false;
  });
  return n;
}

/** One retention step: at most `batch` expired events, in one turn. */
export function expire(db: MemoryDatabase, now: number, batch: number): Promise<ExpiryStep> {
  return db.exclusive(() => {
    const t = db.copy();
    const cutoffs = new Map([...t.projects.values()].map((p) => [p.id, retentionCutoff(now, p.retentionDays)]));
    const deleted = dropEvents(t, (e) => e.timestamp < (cutoffs.get(e.projectId) ?? -Infinity), batch);
    db.tables = t;
    return { deleted, dropped: 0, more: deleted >= batch };
  });
}

/** Erases a person in one turn (nothing else writes meanwhile, so the contract holds trivially). */
export function erase(db: MemoryDatabase, projectId: string, lookup: PersonLookup, opts: { suppress: boolean }): Promise<ErasedPerson | null> {
  return db.exclusive(() => {
    const t = db.copy();
    const start = 'distinctId' in lookup ? t.links.get(projectId)?.get(lookup.distinctId) : lookup.personId;
    const ref = start === undefined ? undefined : currentPerson(t, projectId, start);
    if (ref === undefined) return null;
    const persons = t.persons.get(projectId)!;
    const personIds = new Set([ref.id, ...[...persons].filter(([, p]) => p.mergedInto === ref.id).map(([id]) => id)]);
    const links = t.links.get(projectId) ?? new Map<string, string>();
    const distinctIds = [...links].filter(([, p]) => personIds.has(p)).map(([d]) => d).sort(byteOrder);
    for (const d of distinctIds) links.delete(d);
    for (const id of personIds) {
      persons.delete(id);
      t.traits.get(projectId)?.delete(id);
    }
    if (opts.suppress) {
      const ids = inner(t.suppressed, projectId);
      for (const d of distinctIds) ids.set(d, ref.id);
      const suppressedPersons = inner(t.suppressedPersons, projectId);
      for (const id of personIds) if (!suppressedPersons.has(id)) suppressedPersons.set(id, ref.id);
    }
    const eventsDeleted = dropEvents(t, (e) => e.projectId === projectId && personIds.has(e.personId));
    db.tables = t;
    return { personId: ref.id, distinctIds, eventsDeleted, suppressed: opts.suppress };
  });
}

/** Lifts a suppression, as ErasureStore.unsuppress says; false when there was none. */
export function unsuppress(db: MemoryDatabase, projectId: string, lookup: PersonLookup): Promise<boolean> {
  return db.exclusive(() => {
    const t = db.copy();
    const ids = t.suppressed.get(projectId);
    const persons = t.suppressedPersons.get(projectId);
    let erasure: string | null | undefined;
    if ('distinctId' in lookup) {
      erasure = ids?.get(lookup.distinctId);
      if (erasure === undefined) return false;
      ids!.delete(lookup.distinctId);
    } else {
      erasure = persons?.get(lookup.personId);
      if (erasure === undefined) return false;
    }
    for (const [id, of] of persons ?? []) if (of === erasure) persons!.delete(id);
    db.tables = t;
    return true;
  });
}
