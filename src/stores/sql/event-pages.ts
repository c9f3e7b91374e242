import type { EventCursor, EventPage, EventPageQuery, EventPages } from '../port.js';
import type { SqlEngine } from './engine.js';
import { toStoredEvent } from './rows.js';

/**
 * Where an event stands among a source's events: its timestamp, then `seq`,
 * the engine's own number for the row (SQLite's storage order, PostgreSQL's
 * sequence), which only breaks ties. Never leaves the store: the port sees
 * it as an opaque EventCursor.
 */
export interface EventPosition {
  timestamp: number;
  seq: number;
}

/** A page asked of the engine: the port's query, its cursor read back into a position. */
export interface PositionedPageQuery extends Omit<EventPageQuery, 'after'> {
  after: EventPosition | null;
}

/**
 * The events of a page, with what places each, as the query of `eventRows`
 * selects them: the current person (merges followed) and the properties as
 * JSON text.
 */
export interface EventRow {
  seq: number;
  id: string;
  event: string;
  distinct_id: string | null;
  anonymous_id: string | null;
  person_id: string;
  session_id: string | null;
  timestamp: number;
  received_at: number;
  insert_id: string | null;
  properties: string;
}

/**
 * What each engine does its own way for event pages, because what makes a
 * page cheap differs: PostgreSQL reads a range of events_source_time (one
 * statement a page); SQLite keeps no index on the events table (it would
 * cost the ingest path a random write per event) and walks its minute index
 * instead. Both select their rows with `eventRows`.
 */
export interface EngineEventPages {
  /** The page's rows in its order, `limit` at most (never asked for less than one). */
  page(q: PositionedPageQuery): Promise<EventRow[]>;
  /** Where the source's event with this id stands; the id is a UUID in lower case. */
  position(sourceId: string, eventId: string): Promise<EventPosition | null>;
}

/** The events table with each event's current person, selected as EventRow; an engine adds which rows and their order. */
export function eventRows(engine: SqlEngine) {
  return engine.db.selectFrom('events as e')
    .leftJoin('persons as p', (j) => j.onRef('p.project_id', '=', 'e.project_id').onRef('p.id', '=', 'e.person_id'))
    .select((eb) => [
      'e.seq', 'e.id', 'e.event', 'e.distinct_id', 'e.anonymous_id', eb.fn.coalesce('p.merged_into', 'e.person_id').as('person_id'),
      'e.session_id', 'e.timestamp', 'e.received_at', 'e.insert_id', engine.jsonText('e.properties').as('properties'),
    ]);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The cursor of a position: text only this file reads back. */
const cursorOf = (p: EventPosition): EventCursor => `${p.timestamp}:${p.seq}` as EventCursor;

function positionOf(c: EventCursor): EventPosition {
  const [timestamp, seq] = c.split(':').map(Number);
  if (!Number.isInteger(timestamp) || !Number.isInteger(seq)) throw new Error(`Not a cursor this store gave: ${c}`);
  return { timestamp: timestamp!, seq: seq! };
}

/** Keyset pages over a source's events, on either SQL engine; the engine picks each page's rows (EngineEventPages). */
export class SqlEventPages implements EventPages {
  constructor(
    private readonly engine: SqlEngine,
    private readonly reads: EngineEventPages,
  ) {}

  async eventPage(q: EventPageQuery): Promise<EventPage> {
    if (q.limit <= 0) return { events: [], next: null };
    const rows = await this.reads.page({ ...q, after: q.after === null ? null : positionOf(q.after) });
    const last = rows.at(-1);
    return { events: rows.map(toStoredEvent), next: rows.length === q.limit && last !== undefined ? cursorOf(last) : null };
  }

  async eventCursor(sourceId: string, eventId: string): Promise<EventCursor | null> {
    // Not a UUID: no event has it (PostgreSQL would refuse the cast). Stored in lower case on SQLite; PostgreSQL's uuid reads either.
    if (!UUID.test(eventId)) return null;
    const at = await this.reads.position(sourceId, eventId.toLowerCase());
    return at === null ? null : cursorOf(at);
  }

  async sourceIdsOf(projectId: string): Promise<string[]> {
    const rows = await this.engine.db.selectFrom('sources').select('id').where('project_id', '=', projectId)
      .orderBy(this.engine.bytewise('id')).execute();
    return rows.map((r) => r.id);
  }
}
