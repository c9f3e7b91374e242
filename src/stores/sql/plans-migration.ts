import { type Compilable, sql } from 'kysely';
import type { SchemaContext, SharedMigration } from './shared-migration.js';

/**
 * Tracking plans (docs/plans.md): plans, their immutable versions, and each
 * source's plan, pinned version, mode and unplanned-events setting. SQLite's
 * version 20, PostgreSQL's 16; the same in declared-schema.ts.
 */
export const PLANS_MIGRATION: SharedMigration = {
  shared: (c: SchemaContext): Compilable[] => [
    ...planTables(c),
    // One column a statement: SQLite adds one at a time.
    ...sourcePlanColumns(c),
  ],
};

/** The plans' own tables, as declared-schema.ts declares them too. */
export function planTables({ schema, types, byKey }: SchemaContext): Compilable[] {
  const { text, int } = types;
  return [
    schema.createTable('plans')
      .addColumn('id', text, (c) => c.primaryKey()).addColumn('project_id', text, (c) => c.notNull()).addColumn('name', text, (c) => c.notNull())
      .addColumn('created_at', int, (c) => c.notNull()),
    schema.createIndex('plans_project_name').on('plans').columns(['project_id', 'name']).unique(),
    byKey(schema.createTable('plan_versions')
      .addColumn('plan_id', text, (c) => c.notNull()).addColumn('version', 'integer', (c) => c.notNull())
      .addColumn('rules', text, (c) => c.notNull()).addColumn('created_at', int, (c) => c.notNull())
      .addPrimaryKeyConstraint('plan_versions_pkey', ['plan_id', 'version'])),
  ];
}

function sourcePlanColumns({ schema, types }: SchemaContext): Compilable[] {
  const { text } = types;
  return [
    schema.alterTable('sources').addColumn('plan_id', text),
    schema.alterTable('sources').addColumn('plan_version', 'integer'),
    schema.alterTable('sources').addColumn('plan_mode', text, (c) => c.notNull().defaultTo('off')),
    schema.alterTable('sources').addColumn('unplanned_events', text),
    schema.createIndex('sources_plan').on('sources').column('plan_id').where(sql.ref('plan_id'), 'is not', null),
  ];
}
