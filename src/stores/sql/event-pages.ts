import type { EventCursor, EventPage, EventPageQuery, EventPages, EventPosition, EventRow, PositionedPageQuery, SqlEngine } from '../port.js';
import type { Tuning } from './defaults.js';
import { toStoredEvent } from './rows.js';

/** The events table with each event's current person, selected as EventRow; an engine adds which rows and their order. */
export function eventRows(engine: SqlEngine) {
  return engine.db.selectFrom('events as e')
    // Only a merged person changes what is read: persons_merged holds those alone, and is a far smaller search.
    .leftJoin('persons as p', (j) => j.onRef('p.project_id', '=', 'e.project_id').onRef('p.id', '=', 'e.person_id').on('p.merged_into', 'is not', null))
    .select((eb) => [
      'e.seq', 'e.id', 'e.event', 'e.distinct_id', 'e.anonymous_id', eb.fn.coalesce('p.merged_into', 'e.person_id').as('person_id'),
      'e.session_id', 'e.timestamp', 'e.received_at', 'e.insert_id', engine.dialect.jsonText('e.properties').as('properties'),
    ]);
}

/** Timestamps are epoch ms well inside ±2^53; these stand for "no bound". */
const LOWEST = -Number.MAX_SAFE_INTEGER;
const HIGHEST = Number.MAX_SAFE_INTEGER;

/**
 * The default page (Tuning.eventPage, sql/defaults.ts): one statement, a keyset range of an
 * index on (source, timestamp, seq), PostgreSQL's events_source_time in every
 * day table it names. The bounds always travel as values (the whole range
 * when not given), so the range is bounded on both sides.
 */
export function eventPage(engine: SqlEngine, q: PositionedPageQuery): Promise<EventRow[]> {
  const asc = q.order === 'asc';
  const dir = asc ? 'asc' : 'desc';
  const after = q.after ?? (asc ? { timestamp: LOWEST, seq: LOWEST } : { timestamp: HIGHEST, seq: HIGHEST });
  return eventRows(engine)
    .where('e.source_id', '=', q.sourceId).where('e.timestamp', '>=', q.since ?? LOWEST).where('e.timestamp', '<', q.until ?? HIGHEST)
    .$if(q.event !== undefined, (b) => b.where('e.event', '=', q.event!))
    .$if(q.distinctId !== undefined, (b) => b.where('e.distinct_id', '=', q.distinctId!))
    .where((eb) => eb(eb.refTuple('e.timestamp', 'e.seq'), asc ? '>' : '<', eb.tuple(after.timestamp, after.seq)))
    .orderBy('e.timestamp', dir).orderBy('e.seq', dir).limit(q.limit).execute();
}

/** The default position (Tuning.eventPosition): by id (PostgreSQL's BRIN index on events.id costs the ingest path next to nothing). */
export async function eventPosition(engine: SqlEngine, sourceId: string, eventId: string): Promise<EventPosition | null> {
  const r = await engine.db.selectFrom('events').select(['timestamp', 'seq'])
    .where('id', '=', eventId).where('source_id', '=', sourceId).executeTakeFirst();
  return r ?? null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The cursor of a position: text only this file reads back. */
const cursorOf = (p: EventPosition): EventCursor => `${p.timestamp}:${p.seq}` as EventCursor;

function positionOf(c: EventCursor): EventPosition {
  const [timestamp, seq] = c.split(':').map(Number);
  if (!Number.isInteger(timestamp) || !Number.isInteger(seq)) throw new Error(`Not a cursor this store gave: ${c}`);
  return { timestamp: timestamp!, seq: seq! };
}

/** Keyset pages over a source's events, on either SQL engine; the engine picks each page's rows (Tuning.eventPage, sql/defaults.ts). */
export class SqlEventPages implements EventPages {
  constructor(
    private readonly engine: SqlEngine,
    private readonly reads: Pick<Tuning, 'eventPage' | 'eventPosition'>,
  ) {}

  async eventPage(q: EventPageQuery): Promise<EventPage> {
    if (q.limit <= 0) return { events: [], next: null };
    const rows = await this.reads.eventPage({ ...q, after: q.after === null ? null : positionOf(q.after) });
    const last = rows.at(-1);
    return { events: rows.map(toStoredEvent), next: rows.length === q.limit && last !== undefined ? cursorOf(last) : null };
  }

  async eventCursor(sourceId: string, eventId: string): Promise<EventCursor | null> {
    // Not a UUID: no event has it (PostgreSQL would refuse the cast). Stored in lower case on SQLite; PostgreSQL's uuid reads either.
    if (!UUID.test(eventId)) return null;
    const at = await this.reads.eventPosition(sourceId, eventId.toLowerCase());
    return at === null ? null : cursorOf(at);
  }

  async sourceIdsOf(projectId: string): Promise<string[]> {
    const rows = await this.engine.db.selectFrom('sources').select('id').where('project_id', '=', projectId)
      .orderBy(this.engine.dialect.bytewise('id')).execute();
    return rows.map((r) => r.id);
  }
}
