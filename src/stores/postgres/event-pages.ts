import type { SqlEngine } from '../sql/engine.js';
import { type EngineEventPages, type EventPosition, type EventRow, type PositionedPageQuery, eventRows } from '../sql/event-pages.js';

/** Timestamps are epoch ms well inside ±2^53; these stand for "no bound". */
const LOWEST = -Number.MAX_SAFE_INTEGER;
const HIGHEST = Number.MAX_SAFE_INTEGER;

/**
 * Event pages on PostgreSQL: one statement a page, a keyset range of
 * events_source_time (source, timestamp, seq) in every day table it names.
 * The bounds always travel as values (the whole range when not given), so the
 * range is bounded on both sides. An event's position is found by id through
 * the BRIN index on events.id, which costs the ingest path next to nothing.
 */
export class PgEventPages implements EngineEventPages {
  constructor(private readonly engine: SqlEngine) {}

  page(q: PositionedPageQuery): Promise<EventRow[]> {
    const asc = q.order === 'asc';
    const dir = asc ? 'asc' : 'desc';
    const after = q.after ?? (asc ? { timestamp: LOWEST, seq: LOWEST } : { timestamp: HIGHEST, seq: HIGHEST });
    return eventRows(this.engine)
      .where('e.source_id', '=', q.sourceId).where('e.timestamp', '>=', q.since ?? LOWEST).where('e.timestamp', '<', q.until ?? HIGHEST)
      .$if(q.event !== undefined, (b) => b.where('e.event', '=', q.event!))
      .$if(q.distinctId !== undefined, (b) => b.where('e.distinct_id', '=', q.distinctId!))
      .where((eb) => eb(eb.refTuple('e.timestamp', 'e.seq'), asc ? '>' : '<', eb.tuple(after.timestamp, after.seq)))
      .orderBy('e.timestamp', dir).orderBy('e.seq', dir).limit(q.limit).execute();
  }

  async position(sourceId: string, eventId: string): Promise<EventPosition | null> {
    const r = await this.engine.db.selectFrom('events').select(['timestamp', 'seq'])
      .where('id', '=', eventId).where('source_id', '=', sourceId).executeTakeFirst();
    return r ?? null;
  }
}
