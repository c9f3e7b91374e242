import { type AliasableExpression, type Expression, type InsertQueryBuilder, type SqlBool, sql } from 'kysely';

/**
 * The few pieces of SQL that differ between the engines' dialects, each a
 * small function, never a copy of a query. They are the dialect's, not the
 * engine's: an engine names its own (SqlEngine.dialect) and gives nothing
 * of them, as the schema's hooks (shared-migration.ts) are rendered here too.
 */
export interface SqlDialect {
  /** True where a transaction's reads must lock their rows (FOR UPDATE); SQLite's IMMEDIATE already holds the file. */
  readonly rowLocks: boolean;
  /**
   * Text in the order of its bytes, as the port lists names and ids on every
   * engine (COLLATE "C" on PostgreSQL; SQLite compares bytes already).
   */
  bytewise(column: string): Expression<string>;
  /** A JSON column as its text (schema.ts's Json), to be parsed once by the caller. */
  jsonText(column: string): AliasableExpression<string>;
  /** The column's text starts with `prefix`, in a form the engine reads as a range of its index. */
  startsWith(column: string, prefix: string): Expression<SqlBool>;
  /** A list of ids as a column holds it (pending_erasures.person_ids: JSON text on SQLite, text[] on PostgreSQL), and back. */
  idList(ids: string[]): string | string[];
  idsOf(column: string | string[]): string[];
  /**
   * An INSERT that leaves a row whose key is there already: SQLite's OR
   * IGNORE, which unlike its ON CONFLICT DO NOTHING can never abort, so an
   * INSERT ... SELECT of thousands of rows in a transaction keeps no
   * statement journal (that doubled the writes of a fold step); PostgreSQL's
   * ON CONFLICT DO NOTHING.
   */
  insertIgnoring<DB, TB extends keyof DB, O>(q: InsertQueryBuilder<DB, TB, O>): InsertQueryBuilder<DB, TB, O>;
}

export const SQLITE_DIALECT: SqlDialect = {
  rowLocks: false,
  // BINARY, SQLite's default collation, compares bytes.
  bytewise: (column) => sql.ref(column),
  // Kept as text already.
  jsonText: (column) => sql<string>`${sql.ref(column)}`,
  // A range of the index rather than a LIKE, which SQLite cannot read as one (case-insensitive by default).
  startsWith: (column, prefix) => sql<boolean>`${sql.ref(column)} >= ${prefix} AND ${sql.ref(column)} < ${`${prefix}\u{10FFFF}`}`,
  idList: (ids) => JSON.stringify(ids),
  idsOf: (column) => JSON.parse(column as string) as string[],
  insertIgnoring: (q) => q.orIgnore(),
};

export const POSTGRES_DIALECT: SqlDialect = {
  rowLocks: true,
  // Ids and names sort by their bytes on every engine, not by the database's locale.
  bytewise: (column) => sql<string>`${sql.ref(column)} COLLATE "C"`,
  // jsonb as text: pg would parse it, and a JSON string would then come out as a bare string.
  jsonText: (column) => sql<string>`${sql.ref(column)}::text`,
  // A filter, not a range: the links' key is in the database's collation, where a prefix is no
  // range, and an index in byte order would cost every new distinct_id a write on the ingest
  // path for a console search. The search runs behind the page-read gate instead (listings.ts).
  startsWith: (column, prefix) => sql<boolean>`starts_with(${sql.ref(column)}, ${prefix})`,
  idList: (ids) => ids,
  idsOf: (column) => column as string[],
  insertIgnoring: (q) => q.onConflict((c) => c.doNothing()),
};
