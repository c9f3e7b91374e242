import type { Compilable } from 'kysely';
import type { SchemaContext, SharedMigration } from './shared-migration.js';

/**
 * Items a tracking plan warned or refused, per source, hour, outcome, code
 * and event (sql/outcomes.ts): what the plan's views show by event. SQLite's
 * version 22, PostgreSQL's 18; the same in declared-schema.ts.
 */
export const OUTCOME_EVENTS_MIGRATION: SharedMigration = {
  shared: (c: SchemaContext): Compilable[] => outcomeEventTables(c),
};

/** The table, as declared-schema.ts declares it too. */
export function outcomeEventTables({ schema, types, byKey }: SchemaContext): Compilable[] {
  const { text, int } = types;
  return [
    byKey(schema.createTable('outcome_events')
      .addColumn('source_id', text, (c) => c.notNull()).addColumn('hour', int, (c) => c.notNull()).addColumn('outcome', text, (c) => c.notNull())
      .addColumn('code', text, (c) => c.notNull()).addColumn('event', text, (c) => c.notNull())
      .addColumn('project_id', text, (c) => c.notNull()).addColumn('count', int, (c) => c.notNull())
      .addPrimaryKeyConstraint('outcome_events_pkey', ['source_id', 'hour', 'outcome', 'code', 'event'])),
    schema.createIndex('outcome_events_project').on('outcome_events').columns(['project_id', 'hour']),
  ];
}
