import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient, sql } from 'kysely';
import type pg from 'pg';
import type { SqlEngine, StoreUnavailableError } from '../port.js';
import { POSTGRES_DIALECT } from '../sql/dialects.js';
import type { Database } from '../sql/schema.js';
import { LOCK_NS, isServerError, unavailable } from './pool.js';

/**
 * The store's pool as Kysely's driver sees it, where every failure becomes
 * the port's error (pool.ts's `unavailable`). A client whose connection is in
 * doubt (a timeout, a dropped socket) is destroyed rather than returned to
 * the pool, and its ROLLBACK is not sent: it would only queue behind the
 * stuck statement, and closing the connection rolls back on the server just
 * as well (as pool.ts's inTransaction does).
 */
function poolOf(pool: pg.Pool): PostgresPool {
  return {
    async connect(): Promise<PostgresPoolClient> {
      const client = await pool.connect().catch((e: unknown) => {
        throw unavailable(e);
      });
      let doubt: StoreUnavailableError | undefined;
      const query = async (text: string, values: ReadonlyArray<unknown>) => {
        if (doubt !== undefined) {
          if (/^rollback$/i.test(text)) return { command: 'ROLLBACK', rowCount: 0, rows: [] };
          throw doubt;
        }
        try {
          return await client.query(text, [...values]);
        } catch (e) {
          const failed = unavailable(e);
          if (!isServerError(failed)) doubt = failed;
          throw failed;
        }
      };
      return {
        query: query as unknown as PostgresPoolClient['query'],
        release: (destroy?: boolean) => client.release(doubt ?? destroy),
      };
    },
    // The store ends its pool itself.
    end: async () => undefined,
  };
}

/** The queries written once (src/stores/sql) over the store's pool. */
export function postgresEngine(pool: pg.Pool): SqlEngine {
  return {
    dialect: POSTGRES_DIALECT,
    db: new Kysely<Database>({ dialect: new PostgresDialect({ pool: poolOf(pool) }) }),
    async lockProjects(trx, projectIds) {
      for (const id of projectIds) await sql`SELECT pg_advisory_xact_lock(${LOCK_NS.project}::int, hashtext(${id}::text))`.execute(trx);
    },
    // The database's own clock: servers whose clocks disagree still agree on how long a record has gone untouched.
    clock: () => sql<number>`(extract(epoch FROM clock_timestamp()) * 1000)::bigint`,
    // Every event row stored so far has a seq at or below this, and every later one a higher seq.
    newestArrival: () => sql<number>`coalesce(pg_sequence_last_value(pg_get_serial_sequence('events', 'seq')::regclass), 0)`,
  };
}

