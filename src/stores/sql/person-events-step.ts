import type { SharedMigration } from './shared-migration.js';

/**
 * A person's events by person, for both engines (SQLite version 23,
 * PostgreSQL version 19), written off the request path (sql/person-events.ts):
 * person_events holds keys in sorted runs, each run's keys by person and
 * timestamp after the run's number, so that a run is written at the end of
 * its project's range; person_event_runs lists each project's runs and
 * their sizes; person_events_folded, per project, the seq through which
 * its events have been folded in and the last run's number. All start
 * empty: the fold works through the events already stored from the first seq.
 */
export const PERSON_EVENTS_STEP: SharedMigration = {
  shared: ({ schema, types, byKey }) => [
    byKey(schema.createTable('person_events')
      .addColumn('project_id', types.text, (c) => c.notNull()).addColumn('run', types.int, (c) => c.notNull())
      .addColumn('person_id', types.text, (c) => c.notNull())
      .addColumn('timestamp', types.int, (c) => c.notNull()).addColumn('seq', types.int, (c) => c.notNull())
      .addPrimaryKeyConstraint('person_events_pkey', ['project_id', 'run', 'person_id', 'timestamp', 'seq'])),
    byKey(schema.createTable('person_event_runs')
      .addColumn('project_id', types.text, (c) => c.notNull()).addColumn('run', types.int, (c) => c.notNull())
      .addColumn('keys', types.int, (c) => c.notNull()).addColumn('merging_into', types.int).addColumn('merged_through', types.text)
      .addPrimaryKeyConstraint('person_event_runs_pkey', ['project_id', 'run'])),
    byKey(schema.createTable('person_events_folded')
      .addColumn('project_id', types.text, (c) => c.primaryKey()).addColumn('through', types.int, (c) => c.notNull())
      .addColumn('last_run', types.int, (c) => c.notNull())),
  ],
};
