import pg from 'pg';
import type { DeliverySender, OutgoingBatch, SendOutcome } from '../../stores/port-destinations.js';
import { scrub } from '../urls.js';
import { OWN_DATABASE_MESSAGE, isOwnDatabase } from './own-database.js';
import { type PostgresTarget, parsePostgresUrl } from './postgres-url.js';
import { AddressRefused, type DestinationReach, guardedSocket } from '../reach.js';

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
 * NOTHING, so every event is in the table once. It connects only as the
 * URL's few settings say (postgres-url.ts), through the address guard
 * (reach.ts), and never to the store's own database.
 */
export class PostgresSender implements DeliverySender {
  private readonly pool: pg.Pool | null;
  /** Why the URL is refused, for a destination kept before the rules that refuse it. */
  private readonly invalid: string | null;
  /** Connections found not to be the store's own database. */
  private readonly checked = new WeakSet<pg.PoolClient>();
  private made = false;

  constructor(
    private readonly url: string,
    private readonly table: string,
    private readonly reach: DestinationReach,
  ) {
    const parsed = parsePostgresUrl(url);
    this.invalid = parsed.ok ? null : `Refused: ${parsed.error}`;
    this.pool = parsed.ok ? openPool(parsed.target, reach) : null;
    // A connection dropped while idle: the next batch opens another.
    this.pool?.on('error', () => undefined);
  }

  /** Connects and makes the table, as a destination's creation checks it: null when it is ready, else the error `send` would give. */
  async prepare(): Promise<string | null> {
    const outcome = await this.attempt(async () => undefined);
    return outcome.ok ? null : outcome.error;
  }

  send(b: OutgoingBatch, signal: AbortSignal): Promise<SendOutcome> {
    if (signal.aborted) return Promise.resolve({ ok: false, error: 'Stopped.', retryAfterMs: null });
    return this.attempt(async (c, t) => {
      const col = <T>(f: (e: OutgoingBatch['events'][number]) => T): T[] => b.events.map(f);
      await c.query(
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
    });
  }

  /** A connection (checked not to be the store's own database), the table made, then `work`; any failure as an outcome. */
  private async attempt(work: (c: pg.PoolClient, table: string) => Promise<void>): Promise<SendOutcome> {
    if (this.pool === null) return { ok: false, error: this.invalid!, retryAfterMs: null };
    let c: pg.PoolClient;
    try {
      c = await this.pool.connect();
    } catch (e) {
      return { ok: false, error: this.failure(e), retryAfterMs: null };
    }
    let broken = false;
    try {
      if (!this.checked.has(c)) {
        const own = await isOwnDatabase(c, this.reach.ownDatabaseUrl).catch((e: unknown) => {
          broken = true;
          throw new CheckFailed(e);
        });
        if (own) {
          broken = true;
          return { ok: false, error: OWN_DATABASE_MESSAGE, retryAfterMs: null };
        }
        this.checked.add(c);
      }
      const t = quoted(this.table);
      if (!this.made) {
        await c.query(`CREATE TABLE IF NOT EXISTS ${t} (${TABLE_COLUMNS})`);
        this.made = true;
      }
      await work(c, t);
      return { ok: true };
    } catch (e) {
      return { ok: false, error: this.failure(e), retryAfterMs: null };
    } finally {
      c.release(broken);
    }
  }

  /**
   * What a failure shows: the database's own error (it answered, as
   * PostgreSQL) with its SQLSTATE, the password scrubbed; a refused address
   * as such; any other failure of the network as "failed", without saying
   * which, so that errors do not tell an open port from a closed one.
   */
  private failure(e: unknown): string {
    if (e instanceof AddressRefused) return e.message;
    if (e instanceof CheckFailed) return "PostgreSQL: could not check that this is not Inlet's own database; tried again shortly.";
    const err = e as { code?: string; severity?: string; message?: string };
    if (err.severity !== undefined && typeof err.code === 'string' && /^[0-9A-Z]{5}$/.test(err.code)) {
      return `PostgreSQL: ${scrub(err.message ?? '', this.url)} (SQLSTATE ${err.code}).`;
    }
    if (err.message === 'The server does not support SSL connections') return `PostgreSQL: ${err.message}; sslmode=disable connects without TLS.`;
    if (typeof err.code === 'string' && /CERT|TLS|SSL/.test(err.code)) return `PostgreSQL: the server's TLS certificate was not accepted (${err.code}).`;
    return 'PostgreSQL: the connection failed.';
  }

  async close(): Promise<void> {
    await this.pool?.end().catch(() => undefined);
  }
}

/** A failure of the own-database check itself (the store away), told apart from the destination's. */
class CheckFailed extends Error {
  constructor(readonly reason: unknown) {
    super('own database check failed');
  }
}

function openPool(t: PostgresTarget, reach: DestinationReach): pg.Pool {
  return new pg.Pool({
    host: t.host,
    port: t.port,
    database: t.database,
    user: t.user,
    // A function, so that pg never falls back to the server's PGPASSWORD or ~/.pgpass for a URL without a password.
    password: async () => t.password,
    ssl: t.ssl,
    stream: () => guardedSocket(reach),
    max: 1,
    connectionTimeoutMillis: POSTGRES_TIMEOUT_MS,
    statement_timeout: POSTGRES_TIMEOUT_MS,
    query_timeout: POSTGRES_TIMEOUT_MS + 1000,
    idleTimeoutMillis: 30_000,
    application_name: 'inlet-destination',
  });
}
