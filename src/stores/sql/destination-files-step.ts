import type { SharedMigration } from './shared-migration.js';

/**
 * Destinations, second round, for both engines (SQLite version 21,
 * PostgreSQL version 17): paused_reason, why delivery paused itself (a
 * receiver that answered 410), null when a person paused it; file_plan, the
 * file a destination that writes files (object storage) writes next, as
 * JSON text, recorded before the file is written (port-destinations.ts,
 * FilePlan).
 */
export const DESTINATION_FILES_STEP: SharedMigration = {
  shared: ({ schema, types }) => [
    schema.alterTable('destinations').addColumn('paused_reason', types.text),
    schema.alterTable('destinations').addColumn('file_plan', types.text),
  ],
};
