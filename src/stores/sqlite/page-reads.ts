import type { StoredEvent } from '../port.js';
import type { DayCount } from '../port-console.js';
import type { Db } from './open.js';
import type { EventRow } from '../sql/event-pages.js';
import { toStoredEvent } from '../sql/rows.js';

const DAY_MS = 86_400_000;
const dayName = (day: number): string => new Date(day * DAY_MS).toISOString().slice(0, 10);

/**
 * The console's reads that scan events, as the page-read thread runs them on
 * its own connection (page-reader.ts): never on the connection that writes.
 */
export interface PageReads {
  eventsPerDay(projectId: string, from: number, to: number): DayCount[];
  personEvents(projectId: string, personId: string, limit: number, scan: number): StoredEvent[];
}

/** The page reads over `db`, their statements prepared once. */
export function pageReadsOn(db: Db): PageReads {
  const s = {
    runs: db.prepare(
      `SELECT m.minute / 1440 AS day, sum(json_array_length(m.seqs)) AS n
       FROM sources s JOIN event_minute_runs m ON m.source_id = s.id
       WHERE s.project_id = ? AND m.minute >= ? AND m.minute < ? GROUP BY 1`,
    ),
    tail: db.prepare(
      `SELECT timestamp / ${DAY_MS} AS day, count(*) AS n FROM events
       WHERE seq > (SELECT through FROM event_minutes_state) AND project_id = ? AND timestamp >= ? AND timestamp < ? GROUP BY 1`,
    ),
    personEvents: db.prepare(
      `SELECT e.seq, e.id, e.event, e.distinct_id, e.anonymous_id, coalesce(p.merged_into, e.person_id) AS person_id,
         e.session_id, e.timestamp, e.received_at, e.insert_id, e.properties
       FROM (SELECT * FROM events ORDER BY seq DESC LIMIT ?) e
       LEFT JOIN persons p ON p.project_id = e.project_id AND p.id = e.person_id
       WHERE e.project_id = ? AND coalesce(p.merged_into, e.person_id) = ?
       ORDER BY e.timestamp DESC, e.seq DESC LIMIT ?`,
    ),
  };
  return {
    /**
     * From the minute index (event-minute-index.ts): its runs of the project's
     * sources list each minute's events, and the tail past its mark is read
     * from the events table. One read transaction, so a merge is seen whole.
     */
    eventsPerDay(projectId, from, to) {
      const counts = db.transaction(() => {
        const byDay = new Map<number, number>();
        const add = (rows: { day: number; n: number }[]) => {
          for (const r of rows) byDay.set(r.day, (byDay.get(r.day) ?? 0) + r.n);
        };
        const fromMinute = Math.floor(from / 60_000);
        const toMinute = Math.ceil(to / 60_000);
        add(s.runs.all(projectId, fromMinute, toMinute) as { day: number; n: number }[]);
        add(s.tail.all(projectId, fromMinute * 60_000, toMinute * 60_000) as { day: number; n: number }[]);
        return byDay;
      })();
      return [...counts.entries()].sort((a, b) => a[0] - b[0]).map(([day, events]) => ({ day: dayName(day), events }));
    },
    personEvents(projectId, personId, limit, scan) {
      return (s.personEvents.all(scan, projectId, personId, limit) as EventRow[]).map(toStoredEvent);
    },
  };
}
