import type pg from 'pg';
import type { EventCursor, EventPage, EventPageQuery, EventPages, StoredEvent } from '../port.js';
import { unavailable } from './pool.js';

// Rows come out in the port's shape, plus the seq that places them.
const SELECT = `SELECT e.seq, e.id, e.event, e.distinct_id AS "distinctId", e.anonymous_id AS "anonymousId",
    coalesce(p.merged_into, e.person_id) AS "personId", e.session_id AS "sessionId", e."timestamp",
    e.received_at AS "receivedAt", e.insert_id AS "insertId", e.properties
  FROM events e LEFT JOIN persons p ON p.project_id = e.project_id AND p.id = e.person_id`;
// Bounds always travel as values (the whole range when not given), so each
// statement is a range scan of events_source_time in every day table it names.
const FILTERS = `e.source_id = $1 AND e."timestamp" >= $2 AND e."timestamp" < $3
  AND ($6::text IS NULL OR e.event = $6) AND ($7::text IS NULL OR e.distinct_id = $7)`;

const SQL = {
  asc: `${SELECT} WHERE ${FILTERS} AND (e."timestamp", e.seq) > ($4::bigint, $5::bigint)
    ORDER BY e."timestamp", e.seq LIMIT $8`,
  desc: `${SELECT} WHERE ${FILTERS} AND (e."timestamp", e.seq) < ($4::bigint, $5::bigint)
    ORDER BY e."timestamp" DESC, e.seq DESC LIMIT $8`,
  cursor: 'SELECT seq, "timestamp" FROM events WHERE id = $1 AND source_id = $2',
  sources: 'SELECT id FROM sources WHERE project_id = $1 ORDER BY id COLLATE "C"',
} as const;

/** Timestamps are epoch ms well inside ±2^53; these stand for "no bound". */
const LOWEST = -Number.MAX_SAFE_INTEGER;
const HIGHEST = Number.MAX_SAFE_INTEGER;

/** Keyset pages over a source's events on PostgreSQL, by (timestamp, seq), one statement a page. */
export class PgEventPages implements EventPages {
  constructor(private readonly pool: pg.Pool) {}

  async eventPage(q: EventPageQuery): Promise<EventPage> {
    if (q.limit <= 0) return { events: [], next: null };
    const asc = q.order === 'asc';
    const after = q.after ?? (asc ? { timestamp: LOWEST, seq: LOWEST } : { timestamp: HIGHEST, seq: HIGHEST });
    const rows = await this.query<StoredEvent & { seq: number }>(asc ? SQL.asc : SQL.desc, [
      q.sourceId, q.since ?? LOWEST, q.until ?? HIGHEST, after.timestamp, after.seq, q.event ?? null, q.distinctId ?? null, q.limit,
    ]);
    const last = rows.at(-1);
    return {
      events: rows.map(({ seq: _, ...event }) => event),
      next: rows.length === q.limit && last !== undefined ? { timestamp: last.timestamp, seq: last.seq } : null,
    };
  }

  async eventCursor(sourceId: string, eventId: string): Promise<EventCursor | null> {
    // Not a uuid: no event can have it, and PostgreSQL would refuse the cast.
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(eventId)) return null;
    const [r] = await this.query<{ seq: number; timestamp: number }>(SQL.cursor, [eventId, sourceId]);
    return r === undefined ? null : { timestamp: r.timestamp, seq: r.seq };
  }

  async sourceIdsOf(projectId: string): Promise<string[]> {
    return (await this.query<{ id: string }>(SQL.sources, [projectId])).map((r) => r.id);
  }

  private async query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    try {
      return (await this.pool.query<R>(text, values)).rows;
    } catch (e) {
      throw unavailable(e);
    }
  }
}
