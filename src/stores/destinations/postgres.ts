import pg from 'pg';
import { type DeliverySender, type OutgoingBatch, type SendOutcome, scrub } from '../port-destinations.js';

/** A connection, and then each statement, fail the attempt after this long. */
const POSTGRES_TIMEOUT_MS = 10_000;

/** The table's identifier, each part quoted (the name was checked at creation: letters, digits, underscores). */
const quoted = (table: string): string =>
  table
    .split('.')
    .map((p) => `"${p}"`)
    .join('.');

/**
 * The columns of a postgres destination's table (docs/destinations.md lists
 * them): one row per event, keyed by its id.
 */
export const TABLE_COLUMNS = `
  id uuid PRIMARY KEY, project_id text NOT NULL, source_id text NOT NULL, event text NOT NULL,
  distinct_id text, anonymous_id text, person_id text NOT NULL, session_id text,
  "timestamp" timestamptz NOT NULL, received_at timestamptz NOT NULL, insert_id text, properties jsonb NOT NULL`;

/**
 * Writes batches into a table of any PostgreSQL database, making it first if
 * it is missing. Each batch is one INSERT of all its rows, and an event
 * already there (a batch sent again) is left as it is: ON CONFLICT (id) DO
 * NOTHING, so every event is in the table once.
 */
export class PostgresSender implements DeliverySender {
  private readonly pool: pg.Pool;
  private made = false;

  constructor(
    private readonly url: string,
    private readonly table: string,
  ) {
    this.pool = new pg.Pool({
      connectionString: url,
      max: 1,
      connectionTimeoutMillis: POSTGRES_TIMEOUT_MS,
      statement_timeout: POSTGRES_TIMEOUT_MS,
      query_timeout: POSTGRES_TIMEOUT_MS + 1000,
      idleTimeoutMillis: 30_000,
      application_name: 'inlet-destination',
    });
    // A connection dropped while idle: the next batch opens another.
    this.pool.on('error', () => undefined);
  }

  async send(b: OutgoingBatch, signal: AbortSignal): Promise<SendOutcome> {
    if (signal.aborted) return { ok: false, error: 'Stopped.', retryAfterMs: null };
    const t = quoted(this.table);
    try {
      if (!this.made) {
        await this.pool.query(`CREATE TABLE IF NOT EXISTS ${t} (${TABLE_COLUMNS})`);
        this.made = true;
      }
      const col = <T>(f: (e: OutgoingBatch['events'][number]) => T): T[] => b.events.map(f);
      await this.pool.query(
        `INSERT INTO ${t} (id, project_id, source_id, event, distinct_id, anonymous_id, person_id, session_id, "timestamp", received_at, insert_id, properties)
         SELECT id, $2::text, source_id, event, distinct_id, anonymous_id, person_id, session_id,
                timestamptz 'epoch' + ts * interval '1 millisecond', timestamptz 'epoch' + ra * interval '1 millisecond', insert_id, properties
         FROM unnest($1::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::bigint[], $10::bigint[], $11::text[], $12::jsonb[])
           AS u(id, source_id, event, distinct_id, anonymous_id, person_id, session_id, ts, ra, insert_id, properties)
         ON CONFLICT (id) DO NOTHING`,
        [
          col((e) => e.id), b.projectId, col((e) => e.sourceId), col((e) => e.event), col((e) => e.distinctId),
          col((e) => e.anonymousId), col((e) => e.personId), col((e) => e.sessionId), col((e) => e.timestamp),
          col((e) => e.receivedAt), col((e) => e.insertId), col((e) => e.properties),
        ],
      );
      return { ok: true };
    } catch (e) {
      const code = (e as { code?: string }).code;
      const why = scrub((e as Error).message, this.url);
      return { ok: false, error: `PostgreSQL: ${why}${code !== undefined && /^[0-9A-Z]{5}$/.test(code) ? ` (SQLSTATE ${code})` : ''}.`, retryAfterMs: null };
    }
  }

  async close(): Promise<void> {
    await this.pool.end().catch(() => undefined);
  }
}
