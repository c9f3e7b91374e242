import Database from 'better-sqlite3';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { STORES, createTestDatabase } from '../../../test/conformance/stores.js';
import { describeWith } from '../../../test/helpers/needs-services.js';
import { postgresSchema, sqliteSchema } from '../../../test/helpers/schema-snapshot.js';
import { tempDir } from '../../../test/helpers/fixture.js';
import { migrate as migratePostgres } from '../postgres/migrations.js';
import { migrate as migrateSqlite } from '../sqlite/open.js';

// The declared schema (declared-schema.ts and each engine's schema.ts) is
// what a new database is made from; every older database reaches the
// current version through its engine's history instead. Read back from the
// catalog, both must be the same schema, or the two kinds of database would
// answer the same query differently.

describe('the declared schema, on SQLite', () => {
  it('is the schema the whole history of migrations ends at', () => {
    const tmp = tempDir('inlet-declared-schema-');
    try {
      const upgraded = new Database(`${tmp.dir}/history.db`);
      const declared = new Database(`${tmp.dir}/declared.db`);
      migrateSqlite(upgraded, 'history');
      migrateSqlite(declared);
      expect(sqliteSchema(declared)).toEqual(sqliteSchema(upgraded));
      for (const db of [upgraded, declared]) {
        expect(db.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all())
          .toEqual(upgraded.prepare('SELECT version FROM schema_migrations ORDER BY version').pluck().all());
        // The one row the minute index keeps of how far it has reached.
        expect(db.prepare('SELECT id, through FROM event_minutes_state').all()).toEqual([{ id: 1, through: 0 }]);
      }
      upgraded.close();
      declared.close();
    } finally {
      tmp.remove();
    }
  });
});

(STORES.some((e) => e.name === 'postgres') ? describeWith.bind(null, ['postgres']) : describe.skip)('the declared schema, on PostgreSQL', () => {
  it('is the schema the whole history of migrations ends at, partitions and functions included', async () => {
    const [upgraded, declared] = await Promise.all([createTestDatabase(), createTestDatabase()]);
    try {
      await migratePostgres(upgraded.url, 5000, 'history');
      await migratePostgres(declared.url, 5000);
      const read = async (url: string): Promise<[Record<string, unknown>, unknown[]]> => {
        const c = new pg.Client({ connectionString: url });
        await c.connect();
        try {
          const versions = await c.query('SELECT version FROM schema_migrations ORDER BY version');
          return [await postgresSchema(c), versions.rows];
        } finally {
          await c.end();
        }
      };
      const [[history, historyVersions], [fresh, freshVersions]] = await Promise.all([read(upgraded.url), read(declared.url)]);
      expect(fresh).toEqual(history);
      expect(freshVersions).toEqual(historyVersions);
    } finally {
      await Promise.all([upgraded.drop(), declared.drop()]);
    }
  });
});
