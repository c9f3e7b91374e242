import { sql } from 'kysely';
import type { SharedMigration } from './shared-migration.js';

/**
 * The persons merged into another, by id, for both engines (SQLite version
 * 24, PostgreSQL version 20). Every event read for delivery or listed is
 * joined to its person only to find the person it was merged into, and few
 * are: a search of this small index costs a third of a search of all
 * persons (0.7 µs of 2.5 per event read on SQLite, with 10,000 persons; more
 * with more, whose pages are not all cached).
 */
export const PERSONS_MERGED_STEP: SharedMigration = {
  shared: ({ schema }) => [
    schema.createIndex('persons_merged').on('persons').columns(['project_id', 'id']).where(sql.ref('merged_into'), 'is not', null),
  ],
};
