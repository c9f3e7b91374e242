import Database from 'better-sqlite3';
import pg from 'pg';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { STORES, createTestDatabase } from '../../../test/conformance/stores.js';
import { describeWith } from '../../../test/helpers/needs-services.js';
import { sqliteTestDir } from '../../../test/helpers/sqlite.js';
import { SQLITE_MIGRATIONS } from '../sqlite/migrations.js';
import { type SharedMigration, renderMigration } from './shared-migration.js';

const { open } = sqliteTestDir('inlet-shared-migration-');

/** A step as a table new to both engines would be declared: keyed rows, each kind of column, a default, a partial index. */
const STEP: SharedMigration = {
  shared: ({ schema, types, byKey }) => [
    byKey(schema.createTable('export_jobs')
      .addColumn('project_id', types.text, (c) => c.notNull())
      .addColumn('id', types.text, (c) => c.notNull())
      .addColumn('paused', types.flag, (c) => c.notNull().defaultTo(sql`false`))
      .addColumn('config', types.json, (c) => c.notNull())
      .addColumn('secret', types.bytes)
      .addColumn('created_at', types.int, (c) => c.notNull())
      .addPrimaryKeyConstraint('export_jobs_pk', ['project_id', 'id'])),
    schema.createIndex('export_jobs_running').on('export_jobs').columns(['project_id', 'created_at']).where(sql.ref('paused'), '=', sql`false`),
    schema.alterTable('export_jobs').addColumn('last_error', types.text),
  ],
};

describe('a migration declared once', () => {
  it('renders as SQLite SQL that SQLite applies: keyed rows WITHOUT ROWID, flags as 0/1', () => {
    const db = new Database(':memory:');
    db.exec(renderMigration(STEP, 'sqlite'));
    expect(db.prepare("SELECT sql FROM sqlite_master WHERE name = 'export_jobs'").pluck().get()).toMatch(/without rowid$/);
    db.prepare("INSERT INTO export_jobs (project_id, id, config, created_at) VALUES ('prj_1', 'x', '{}', 1)").run();
    expect(db.prepare('SELECT paused, last_error FROM export_jobs').get()).toEqual({ paused: 0, last_error: null });
    db.close();
  });

  it('takes the next version of the engine’s list: a store of the version before, opened, applies it once, and records it', () => {
    // A store made before the step ships (a new one is made from the declared schema, at whatever version the list ends).
    open().close();
    SQLITE_MIGRATIONS.push(STEP);
    try {
      const db = open();
      expect(db.prepare('SELECT max(version) FROM schema_migrations').pluck().get()).toBe(SQLITE_MIGRATIONS.length);
      expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'export_jobs_running'").pluck().get()).toBe(1);
      db.close();
      open().close();
    } finally {
      SQLITE_MIGRATIONS.pop();
    }
  });

  it('refuses a statement with parameters, which a migration would run without them', () => {
    const withValue: SharedMigration = { shared: ({ schema }) => [schema.createTable('t').addColumn('a', 'text').addCheckConstraint('c', sql`a <> ${'x'}`)] };
    expect(() => renderMigration(withValue, 'sqlite')).toThrow(/parameters/);
  });
});

(STORES.some((e) => e.name === 'postgres') ? describeWith.bind(null, ['postgres']) : describe.skip)('a migration declared once, on PostgreSQL', () => {
  it('renders as PostgreSQL SQL that PostgreSQL applies: jsonb, bytea, boolean and bigint columns', async () => {
    const db = await createTestDatabase();
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      await c.query(renderMigration(STEP, 'postgres'));
      const { rows } = await c.query<{ column_name: string; data_type: string }>(
        "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'export_jobs' ORDER BY ordinal_position",
      );
      expect(rows.map((r) => `${r.column_name} ${r.data_type}`)).toEqual([
        'project_id text', 'id text', 'paused boolean', 'config jsonb', 'secret bytea', 'created_at bigint', 'last_error text',
      ]);
    } finally {
      await c.end();
      await db.drop();
    }
  });
});
