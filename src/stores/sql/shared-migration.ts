import {
  type ColumnDataType, type Compilable, type CreateTableBuilder, DummyDriver, type Expression, Kysely, PostgresAdapter, PostgresIntrospector, PostgresQueryCompiler,
  type SchemaModule, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler, sql,
} from 'kysely';

/** The engines a shared step is rendered for. */
export type SchemaDialect = 'sqlite' | 'postgres';

/** The column types that differ by engine, as schema.ts reads them (a Flag is 0/1 on SQLite, a Json is text there). */
export interface ColumnTypes {
  text: ColumnDataType;
  /** Epoch ms, counts and sizes: numbers past 2^31. */
  int: ColumnDataType;
  /** A yes/no column (schema.ts's Flag). */
  flag: ColumnDataType;
  /** A JSON column (schema.ts's Json). */
  json: ColumnDataType;
  bytes: ColumnDataType;
  /** An id the engine assigns: SQLite's rowid (INTEGER PRIMARY KEY), PostgreSQL's bigserial. */
  serial: ColumnDataType;
  /** A UUID: uuid on PostgreSQL, text on SQLite. */
  uuid: ColumnDataType;
  /** A list of ids: text[] on PostgreSQL, a JSON array as text on SQLite. */
  idList: ColumnDataType | Expression<unknown>;
}

/** What a shared step declares its schema with: Kysely's schema builder, and the engine's hooks. */
export interface SchemaContext {
  schema: SchemaModule;
  types: ColumnTypes;
  /** A table read by its primary key alone: WITHOUT ROWID on SQLite, nothing to add on PostgreSQL. */
  byKey<T extends CreateTableBuilder<string, string>>(table: T): T;
  /**
   * The engine rendered for, for what differs inside a shared table and has
   * no name of its own (a default or a check one engine's history kept):
   * say why where it is asked.
   */
  dialect: SchemaDialect;
}

/**
 * A migration declared once, for both engines: its statements are rendered
 * in each engine's dialect when that engine migrates, and take the next
 * version in each engine's list (sqlite/migrations.ts, postgres/migrations.ts),
 * whose histories before it differ and stay as they shipped. What it changes
 * is changed in declared-schema.ts too, which new databases are made from.
 */
export interface SharedMigration {
  shared(c: SchemaContext): Compilable[];
}

const TYPES: Record<SchemaDialect, ColumnTypes> = {
  sqlite: { text: 'text', int: 'integer', flag: 'integer', json: 'text', bytes: 'blob', serial: 'integer', uuid: 'text', idList: 'text' },
  postgres: { text: 'text', int: 'bigint', flag: 'boolean', json: 'jsonb', bytes: 'bytea', serial: 'bigserial', uuid: 'uuid', idList: sql`text[]` },
};

// Compilers only: no connection, nothing runs through them.
const RENDERERS: Record<SchemaDialect, Kysely<unknown>> = {
  sqlite: new Kysely({
    dialect: {
      createAdapter: () => new SqliteAdapter(), createDriver: () => new DummyDriver(),
      createIntrospector: (db) => new SqliteIntrospector(db), createQueryCompiler: () => new SqliteQueryCompiler(),
    },
  }),
  postgres: new Kysely({
    dialect: {
      createAdapter: () => new PostgresAdapter(), createDriver: () => new DummyDriver(),
      createIntrospector: (db) => new PostgresIntrospector(db), createQueryCompiler: () => new PostgresQueryCompiler(),
    },
  }),
};

/** A shared step as one engine's SQL: its statements, each ended by a semicolon. */
export function renderMigration(m: SharedMigration, dialect: SchemaDialect): string {
  const context: SchemaContext = {
    schema: RENDERERS[dialect].schema,
    types: TYPES[dialect],
    byKey: (table) => (dialect === 'sqlite' ? (table.modifyEnd(sql`without rowid`) as typeof table) : table),
    dialect,
  };
  return m.shared(context).map((q) => {
    const { sql: text, parameters } = q.compile();
    // Schema statements carry their values inline; one with parameters would run without them.
    if (parameters.length > 0) throw new Error(`A shared migration's statement has parameters: ${text}`);
    return `${text};`;
  }).join('\n');
}
