/**
 * Whether a destination's connection reached the store's own database. A
 * destination there would make tables beside Inlet's (a future day's
 * partition of events among them) and its errors would show Inlet's schema.
 * Host names and ports say little (an alias, another address of the same
 * machine, a pooler in front): the database itself is asked who it is, on
 * the destination's connection and on one to the store, and the answers
 * compared.
 */
import pg from 'pg';

/** Who a database is: its cluster (system identifier, or when that is not readable, when the cluster started) and its oid there. */
interface Identity {
  database: string;
  system: string | null;
  started: string;
}

/** Anything that runs a query: a pg client, pooled or not. */
interface Queryable {
  query<R extends pg.QueryResultRow>(text: string): Promise<pg.QueryResult<R>>;
}

async function identityOf(c: Queryable): Promise<Identity> {
  const base = await c.query<{ database: string; started: string }>(
    'SELECT d.oid::text AS database, pg_catalog.pg_postmaster_start_time()::text AS started FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database()',
  );
  // Readable by everyone unless an administrator revoked it; the start time stands in then.
  const system = await c
    .query<{ system: string }>('SELECT system_identifier::text AS system FROM pg_catalog.pg_control_system()')
    .then((r) => r.rows[0]?.system ?? null, () => null);
  const row = base.rows[0]!;
  return { database: row.database, started: row.started, system };
}

const same = (a: Identity, b: Identity): boolean =>
  a.database === b.database && (a.system !== null && b.system !== null ? a.system === b.system : a.started === b.started);

/**
 * Whether `target` (a destination's connection) is the database at
 * `ownUrl` (the store's; null: the embedded store, no database to reach).
 * Throws when either cannot be asked: a destination is not written to while
 * that is unknown.
 */
export async function isOwnDatabase(target: Queryable, ownUrl: string | null): Promise<boolean> {
  if (ownUrl === null) return false;
  const theirs = await identityOf(target);
  const own = new pg.Client({ connectionString: ownUrl, connectionTimeoutMillis: 10_000, application_name: 'inlet-destination-check' });
  // A failed connection also emits 'error'; it is answered by connect's rejection.
  own.on('error', () => undefined);
  try {
    await own.connect();
    return same(theirs, await identityOf(own));
  } finally {
    await own.end().catch(() => undefined);
  }
}

/** What `last_error` and a refused creation say of a destination that is the store's own database. */
export const OWN_DATABASE_MESSAGE = "Refused: this is Inlet's own database (INLET_DATABASE_URL); give a database of its own to the destination.";
