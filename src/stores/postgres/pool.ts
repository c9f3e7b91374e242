import pg from 'pg';
import { StoreUnavailableError } from '../port.js';

/** Time limits that keep every request bounded while the database is down or stuck. */
export interface PgTimeouts {
  /** Waiting for a connection, new or from the pool. */
  connectMs: number;
  /** One statement, enforced by the server. */
  statementMs: number;
}

export const DEFAULT_TIMEOUTS: PgTimeouts = { connectMs: 2000, statementMs: 5000 };

/** Advisory lock namespaces (the first of the two int4 keys), so Inlet's locks never meet each other's. */
export const LOCK_NS = { migrations: 0x494e4c01, partitions: 0x494e4c02, project: 0x494e4c03 } as const;

// Epoch-ms columns are bigint; every value Inlet keeps fits a double exactly,
// and the rest of the code expects numbers, not the strings pg gives by default.
const types = new pg.TypeOverrides();
types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));

/** A pool whose every wait is bounded, and which survives the database going away. */
export function createPool(url: string, t: PgTimeouts, onError: (e: Error) => void): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    types,
    max: 10,
    connectionTimeoutMillis: t.connectMs,
    statement_timeout: t.statementMs,
    // The server cancels a slow statement first and the connection stays
    // usable; this client-side limit only catches a server that stopped answering.
    query_timeout: t.statementMs + 1000,
    // A process cut off mid-transaction must not hold a project lock for long.
    idle_in_transaction_session_timeout: t.statementMs * 2,
    keepAlive: true,
    idleTimeoutMillis: 30_000,
    application_name: 'inlet',
    // PostgreSQL's default plan cache: a statement given a name gets a generic
    // plan after five runs. Only statements whose plan cannot depend on the
    // data are named (ingest-tx.ts); a generic plan of a read, made while its
    // table was small, stayed in use as it grew and cut big batches to a quarter.
  });
  // An idle client whose server went away is dropped by the pool, which then
  // emits the error: without a listener that would end the process. The pool
  // opens fresh connections on the next request, which is how it recovers.
  pool.on('error', onError);
  // A client checked out between statements has no listener of the pool's; its
  // next statement fails instead, and that failure is handled where it is made.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

/** The server's own error behind a failure (wrapped as the port's or not); null when it never answered. */
export function serverError(e: unknown): pg.DatabaseError | null {
  const cause = e instanceof StoreUnavailableError ? e.cause : e;
  return cause instanceof pg.DatabaseError ? cause : null;
}

/** True when the server answered with an error, so the connection itself is still sound. */
export function isServerError(e: unknown): boolean {
  return serverError(e) !== null;
}

/**
 * SQLSTATE classes of a refusal of what was written: data exceptions (22),
 * integrity constraints (23), program limits such as an index row too big
 * (54). The same rows fail again; other rows may pass.
 */
const REFUSED_CLASSES = new Set(['22', '23', '54']);

/**
 * Wraps a driver failure as the port's error; everything else passes through.
 * The message says which it was: a server that answered with an error was
 * reached, and an operator told otherwise would look for an outage that is
 * not there (a value it refused, a statement cancelled at its time limit).
 */
export function unavailable(e: unknown): StoreUnavailableError {
  if (e instanceof StoreUnavailableError) return e;
  if (!(e instanceof pg.DatabaseError)) return new StoreUnavailableError('PostgreSQL could not be reached.', { cause: e });
  const code = /^[0-9A-Z]{5}$/.test(e.code ?? '') ? e.code! : 'unknown';
  const refused = REFUSED_CLASSES.has(code.slice(0, 2));
  const what = refused ? 'refused the statement for a value it holds' : 'failed the statement';
  return new StoreUnavailableError(`PostgreSQL ${what} (SQLSTATE ${code}).`, { cause: e, refused });
}

/** The rows of one statement, its failure the port's (`unavailable`). */
export async function rowsOf<R extends pg.QueryResultRow>(c: pg.Pool | pg.PoolClient, q: string | pg.QueryConfig, values?: unknown[]): Promise<R[]> {
  try {
    return (await c.query<R>(q, values)).rows;
  } catch (e) {
    throw unavailable(e);
  }
}

/**
 * Runs `fn` between BEGIN and COMMIT (or ROLLBACK when `keep` is false) on one
 * pooled client. On failure the transaction is rolled back; a client whose
 * connection is in doubt is destroyed rather than returned to the pool.
 * Failures of the database itself reject as StoreUnavailableError; an error
 * thrown by `fn`'s own logic is passed through unchanged.
 */
export async function inTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>, keep = true): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (e) {
    throw unavailable(e);
  }
  let destroy: Error | undefined;
  try {
    try {
      await client.query('BEGIN');
    } catch (e) {
      throw unavailable(e);
    }
    const out = await fn(client);
    try {
      // If the connection drops during COMMIT the outcome is unknown; the
      // client is told 503 and its retry is answered as a duplicate by insert_id.
      await client.query(keep ? 'COMMIT' : 'ROLLBACK');
    } catch (e) {
      throw unavailable(e);
    }
    return out;
  } catch (e) {
    destroy = await rollback(client, e);
    throw e;
  } finally {
    client.release(destroy);
  }
}

/** Rolls back after `e`; returns an error when the client must be destroyed instead of reused. */
async function rollback(client: pg.PoolClient, e: unknown): Promise<Error | undefined> {
  // A timeout or a dropped connection leaves the session in an unknown state,
  // and a ROLLBACK would only queue behind the stuck statement: closing the
  // connection rolls back on the server just as well.
  if (e instanceof StoreUnavailableError && !isServerError(e)) return e;
  try {
    await client.query('ROLLBACK');
    return undefined;
  } catch (r) {
    return r instanceof Error ? r : new Error(String(r));
  }
}
