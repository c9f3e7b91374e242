import type { SharedMigration } from './shared-migration.js';

/**
 * A person's events by person, for both engines (SQLite version 22,
 * PostgreSQL version 18), written off the request path (sql/person-events.ts):
 * person_events holds a key per event, sorted by project, person and
 * timestamp; person_events_folded, per project, the seq through which the
 * project's events have been folded in. Both start empty: the fold works
 * through the events already stored from the first seq.
 */
export const PERSON_EVENTS_STEP: SharedMigration = {
  shared: ({ schema, types, byKey }) => [
    byKey(schema.createTable('person_events')
      .addColumn('project_id', types.text, (c) => c.notNull()).addColumn('person_id', types.text, (c) => c.notNull())
      .addColumn('timestamp', types.int, (c) => c.notNull()).addColumn('seq', types.int, (c) => c.notNull())
      .addPrimaryKeyConstraint('person_events_pkey', ['project_id', 'person_id', 'timestamp', 'seq'])),
    byKey(schema.createTable('person_events_folded')
      .addColumn('project_id', types.text, (c) => c.primaryKey()).addColumn('through', types.int, (c) => c.notNull())),
  ],
};
