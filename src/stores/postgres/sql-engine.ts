import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient, sql } from 'kysely';
import type pg from 'pg';
import type { StoreUnavailableError } from '../port.js';
import type { SqlEngine } from '../sql/engine.js';
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
    db: new Kysely<Database>({ dialect: new PostgresDialect({ pool: poolOf(pool) }) }),
    rowLocks: true,
    // Ids and names sort by their bytes on every engine, not by the database's locale.
    bytewise: (column) => sql<string>`${sql.ref(column)} COLLATE "C"`,
    // jsonb as text: pg would parse it, and a JSON string would then come out as a bare string.
    jsonText: (column) => sql<string>`${sql.ref(column)}::text`,
    // A range in byte order, which person_links_prefix holds; starts_with() is read as a filter, never a range.
    startsWith: (column, prefix) => {
      const from = sql<boolean>`${sql.ref(column)} COLLATE "C" >= ${prefix}`;
      const to = prefixEnd(prefix);
      return to === null ? from : sql<boolean>`${from} AND ${sql.ref(column)} COLLATE "C" < ${to}`;
    },
    async lockProjects(trx, projectIds) {
      for (const id of projectIds) await sql`SELECT pg_advisory_xact_lock(${LOCK_NS.project}::int, hashtext(${id}::text))`.execute(trx);
    },
  };
}

/**
 * The least text after every text that starts with `prefix`, in byte (code
 * point) order: the prefix with its last character one higher, that character
 * dropped first when it is the highest there is. Null when there is none.
 */
export function prefixEnd(prefix: string): string | null {
  const chars = [...prefix];
  while (chars.length > 0) {
    const last = chars.pop()!.codePointAt(0)!;
    if (last === 0x10ffff) continue;
    // Surrogates are no characters: after U+D7FF comes U+E000.
    return chars.join('') + String.fromCodePoint(last === 0xd7ff ? 0xe000 : last + 1);
  }
  return null;
}
