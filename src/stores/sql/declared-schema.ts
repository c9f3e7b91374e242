import { type ColumnDefinitionBuilder, type Compilable, type CreateTableBuilder, sql } from 'kysely';
import type { SchemaContext, SharedMigration } from './shared-migration.js';
import { planTables } from './plans-migration.js';
import { outcomeEventTables } from './outcome-events-migration.js';
import { PERSON_EVENTS_STEP } from './person-events-step.js';

type Table = CreateTableBuilder<string, string>;
const notNull = (c: ColumnDefinitionBuilder): ColumnDefinitionBuilder => c.notNull();

/**
 * The schema as it is now, declared once: a new database is made from this
 * at the current version, where an existing one is brought to the same place
 * by the history of its engine (sqlite/migrations.ts, postgres/migrations.ts).
 * schema-declaration.test.ts reads both back from the engine's catalog and
 * requires them equal, table by table and index by index, so this file is
 * the schema's truth. What only one engine has (SQLite's minute index and
 * identify claims, PostgreSQL's day partitions, insert_ids, BRIN indexes and
 * partition function) is in that engine's schema.ts; what differs within a
 * shared table is asked of `dialect` here, each case saying why.
 */
export const DECLARED_SCHEMA: SharedMigration = {
  shared: ({ schema, types, byKey, dialect }: SchemaContext): Compilable[] => {
    const { text, int, flag, json, bytes } = types;
    const no = dialect === 'sqlite' ? sql`0` : sql`false`;
    /** A primary key over several columns, named as PostgreSQL names one of its own. */
    const key = (name: string, columns: string[]) => (t: Table): Table => t.addPrimaryKeyConstraint(`${name}_pkey`, columns);
    return [
      schema.createTable('orgs')
        .addColumn('id', text, (c) => c.primaryKey()).addColumn('name', text, notNull)
        .addColumn('is_default', flag, (c) => c.notNull().defaultTo(no))
        .addColumn('created_at', int, notNull).addColumn('deleted_at', int),
      schema.createTable('projects')
        .addColumn('id', text, (c) => c.primaryKey()).addColumn('org_id', text, notNull).addColumn('name', text, notNull)
        .addColumn('api_enabled', flag, notNull).addColumn('monthly_event_limit', int)
        .addColumn('created_at', int, notNull).addColumn('deleted_at', int)
        .addColumn('retention_days', 'integer', (c) => c.notNull().defaultTo(400)),
      schema.createTable('sources')
        .addColumn('id', text, (c) => c.primaryKey()).addColumn('project_id', text, notNull).addColumn('name', text, notNull)
        .addColumn('filter_bots', flag, notNull).addColumn('record_ip', flag, notNull)
        .addColumn('created_at', int, notNull).addColumn('deleted_at', int)
        .addColumn('plan_id', text).addColumn('plan_version', 'integer')
        .addColumn('plan_mode', text, (c) => c.notNull().defaultTo('off')).addColumn('unplanned_events', text),
      schema.createIndex('sources_plan').on('sources').column('plan_id').where(sql.ref('plan_id'), 'is not', null),
      ...planTables({ schema, types, byKey, dialect }),
      ...outcomeEventTables({ schema, types, byKey, dialect }),
      schema.createTable('api_keys')
        .addColumn('id', text, (c) => c.primaryKey()).addColumn('source_id', text, notNull)
        .addColumn('hash', bytes, (c) => c.notNull().unique()).addColumn('last_four', text, notNull)
        .addColumn('created_at', int, notNull).addColumn('last_used_at', int).addColumn('expires_at', int).addColumn('revoked_at', int),
      schema.createIndex('api_keys_source').on('api_keys').column('source_id'),

      byKey(schema.createTable('persons')
        .addColumn('project_id', text, notNull).addColumn('id', text, notNull)
        // Only PostgreSQL's first schema checked the kind; SQLite's never did, and a check added to a table there means rebuilding it.
        .addColumn('kind', text, (c) => (dialect === 'postgres' ? c.notNull().check(sql`kind IN ('browser', 'server')`) : c.notNull()))
        .addColumn('merged_into', text).addColumn('created_at', int, notNull)
        .$call(key('persons', ['project_id', 'id']))),
      schema.createIndex('persons_merged_into').on('persons').columns(['project_id', 'merged_into']).where(sql.ref('merged_into'), 'is not', null),
      schema.createIndex('persons_merged').on('persons').columns(['project_id', 'id']).where(sql.ref('merged_into'), 'is not', null),
      // Pages of people are ordered by id byte by byte, as SQLite's BINARY collation does and PostgreSQL's "C".
      schema.createIndex('persons_newest').on('persons').columns(['project_id', 'created_at'])
        .expression(dialect === 'postgres' ? sql`id COLLATE "C"` : sql.ref('id')).where(sql.ref('merged_into'), 'is', null),
      byKey(schema.createTable('person_links')
        .addColumn('project_id', text, notNull).addColumn('distinct_id', text, notNull).addColumn('person_id', text, notNull)
        .$call(key('person_links', ['project_id', 'distinct_id']))),
      schema.createIndex('person_links_person').on('person_links').columns(['project_id', 'person_id']),
      byKey(schema.createTable('person_traits')
        .addColumn('project_id', text, notNull).addColumn('person_id', text, notNull).addColumn('key', text, notNull)
        .addColumn('value', json, notNull).addColumn('set_at', int, notNull)
        .addColumn('unset', flag, (c) => c.notNull().defaultTo(no))
        .$call(key('person_traits', ['project_id', 'person_id', 'key']))),

      byKey(schema.createTable('usage')
        .addColumn('project_id', text, notNull).addColumn('month', text, notNull).addColumn('events', int, notNull)
        .$call(key('usage', ['project_id', 'month']))),
      byKey(schema.createTable('suppressed_ids')
        .addColumn('project_id', text, notNull).addColumn('distinct_id', text, notNull).addColumn('created_at', int, notNull)
        .addColumn('person_id', text)
        .$call(key('suppressed_ids', ['project_id', 'distinct_id']))),
      byKey(schema.createTable('suppressed_persons')
        .addColumn('project_id', text, notNull).addColumn('person_id', text, notNull).addColumn('erased_person_id', text, notNull)
        .addColumn('created_at', int, notNull)
        .$call(key('suppressed_persons', ['project_id', 'person_id']))),

      schema.createTable('users')
        .addColumn('id', text, (c) => c.primaryKey()).addColumn('email', text, (c) => c.notNull().unique())
        .addColumn('password_hash', text, notNull).addColumn('admin', flag, notNull).addColumn('created_at', int, notNull)
        .addColumn('disabled', flag, (c) => c.notNull().defaultTo(no)),
      byKey(schema.createTable('memberships')
        .addColumn('user_id', text, notNull).addColumn('org_id', text, notNull)
        .$call(key('memberships', ['user_id', 'org_id']))),
      schema.createTable('sessions')
        .addColumn('token_hash', bytes, (c) => c.primaryKey()).addColumn('user_id', text, notNull).addColumn('csrf_token', text, notNull)
        .addColumn('created_at', int, notNull).addColumn('last_seen_at', int, notNull),
      schema.createIndex('sessions_user').on('sessions').column('user_id'),
      byKey(schema.createTable('login_failures')
        .addColumn('key', text, (c) => c.primaryKey()).addColumn('failures', 'integer', notNull)
        .addColumn('first_at', int, notNull).addColumn('blocked_until', int, (c) => c.notNull().defaultTo(0))),

      schema.createTable('pending_erasures')
        .addColumn('id', types.serial, (c) => c.primaryKey()).addColumn('project_id', text, notNull)
        .addColumn('person_ids', types.idList, notNull).addColumn('through_seq', int, notNull).addColumn('touched_at', int, notNull),

      byKey(schema.createTable('outcome_counts')
        .addColumn('source_id', text, notNull).addColumn('minute', int, notNull).addColumn('outcome', text, notNull)
        .addColumn('code', text, notNull).addColumn('project_id', text, notNull).addColumn('count', int, notNull)
        .$call(key('outcome_counts', ['source_id', 'minute', 'outcome', 'code']))),
      schema.createIndex('outcome_counts_project').on('outcome_counts').columns(['project_id', 'minute']),
      schema.createTable('item_samples')
        // A sample's id is never reused (a page of samples read by id would otherwise find a newer one where an old one was).
        .addColumn('id', types.serial, (c) => (dialect === 'sqlite' ? c.primaryKey().autoIncrement() : c.primaryKey()))
        .addColumn('project_id', text, notNull).addColumn('source_id', text, notNull)
        .addColumn('outcome', text, notNull).addColumn('code', text, notNull).addColumn('codes', text, notNull)
        .addColumn('errors', text, notNull).addColumn('item', text, notNull).addColumn('cut', flag, notNull)
        .addColumn('bytes', 'integer', notNull).addColumn('received_at', int, notNull).addColumn('request_id', text, notNull)
        .addColumn('item_index', 'integer', notNull).addColumn('distinct_id', text).addColumn('anonymous_id', text)
        .addColumn('previous_id', text),
      schema.createIndex('item_samples_source').on('item_samples').columns(['source_id', 'id']),
      schema.createIndex('item_samples_code').on('item_samples').columns(['source_id', 'code', 'id']),
      schema.createIndex('item_samples_project').on('item_samples').columns(['project_id', 'id']),
      schema.createIndex('item_samples_received').on('item_samples').columns(['project_id', 'received_at']),
      ...(['distinct_id', 'anonymous_id', 'previous_id'] as const).map((column) =>
        schema.createIndex(`item_samples_${column.replace('_id', '')}`).on('item_samples')
          .columns(['project_id', column]).where(sql.ref(column), 'is not', null)),

      schema.createTable('destinations')
        .addColumn('id', text, (c) => c.primaryKey()).addColumn('project_id', text, notNull).addColumn('kind', text, notNull)
        .addColumn('sources', text, notNull).addColumn('events', text, notNull).addColumn('paused', flag, notNull)
        .addColumn('cursor_seq', int, notNull).addColumn('generation', 'integer', notNull).addColumn('delivered', int, notNull)
        .addColumn('last_error', text).addColumn('last_delivered_at', int).addColumn('lease_holder', text)
        .addColumn('lease_until', int, notNull).addColumn('created_at', int, notNull)
        // SQLite kept the default its history added the column with (dropping one there means rebuilding the table).
        .addColumn('config', text, (c) => (dialect === 'sqlite' ? c.notNull().defaultTo('{}') : c.notNull()))
        .addColumn('paused_reason', text).addColumn('file_plan', text),
      schema.createIndex('destinations_project').on('destinations').column('project_id'),

      byKey(schema.createTable('group_types')
        .addColumn('project_id', text, notNull).addColumn('group_type', text, notNull).addColumn('created_at', int, notNull)
        .$call(key('group_types', ['project_id', 'group_type']))),
      byKey(schema.createTable('project_groups')
        .addColumn('project_id', text, notNull).addColumn('group_type', text, notNull).addColumn('group_key', text, notNull)
        .addColumn('created_at', int, notNull)
        .$call(key('project_groups', ['project_id', 'group_type', 'group_key']))),
      byKey(schema.createTable('group_traits')
        .addColumn('project_id', text, notNull).addColumn('group_type', text, notNull).addColumn('group_key', text, notNull)
        .addColumn('key', text, notNull).addColumn('value', json, notNull).addColumn('set_at', int, notNull)
        .$call(key('group_traits', ['project_id', 'group_type', 'group_key', 'key']))),
      byKey(schema.createTable('group_members')
        .addColumn('project_id', text, notNull).addColumn('group_type', text, notNull).addColumn('group_key', text, notNull)
        .addColumn('person_id', text, notNull).addColumn('created_at', int, notNull)
        .$call(key('group_members', ['project_id', 'group_type', 'group_key', 'person_id']))),
      schema.createIndex('group_members_person').on('group_members').columns(['project_id', 'person_id']),

      schema.createTable('events')
        // SQLite's seq is the rowid, so appends stay at the end of the table; PostgreSQL's table is split by day and has no key.
        .addColumn('seq', types.serial, (c) => (dialect === 'sqlite' ? c.primaryKey() : c.notNull()))
        .addColumn('id', types.uuid, notNull).addColumn('project_id', text, notNull).addColumn('source_id', text, notNull)
        .addColumn('event', text, notNull).addColumn('distinct_id', text).addColumn('anonymous_id', text)
        .addColumn('person_id', text, notNull).addColumn('session_id', text)
        .addColumn('timestamp', int, notNull).addColumn('received_at', int, notNull).addColumn('insert_id', text)
        .addColumn('properties', json, notNull)
        .$call((t) => (dialect === 'postgres' ? t.modifyEnd(sql`PARTITION BY RANGE ("timestamp")`) : t)),
      ...PERSON_EVENTS_STEP.shared({ schema, types, byKey, dialect }),
    ];
  },
};
