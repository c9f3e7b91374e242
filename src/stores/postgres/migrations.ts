import pg from 'pg';
import { StoreUnavailableError } from '../port.js';
import { DECLARED_SCHEMA } from '../sql/declared-schema.js';
import { PERSON_EVENTS_STEP } from '../sql/person-events-step.js';
import { PERSONS_MERGED_STEP } from '../sql/persons-merged-step.js';
import { DESTINATION_FILES_STEP } from '../sql/destination-files-step.js';
import { type SharedMigration, renderMigration } from '../sql/shared-migration.js';
import { PLANS_MIGRATION } from '../sql/plans-migration.js';
import { OUTCOME_EVENTS_MIGRATION } from '../sql/outcome-events-migration.js';
import { LOCK_NS } from './pool.js';
import { ENSURE_EVENT_PARTITION, POSTGRES_OWN_SCHEMA } from './schema.js';

/** The SQLSTATE of version 15's refusal while older servers still deliver (class IN: Inlet's own). */
const OLDER_SERVERS_DELIVER = 'IN001';

/**
 * Versioned schema of the PostgreSQL store: the way every older database
 * reaches the current version (a new one is made from sql/declared-schema.ts
 * and schema.ts). A migration is never edited once shipped; a change is a new
 * entry at the end: SQL, or a step declared once for both engines
 * (sql/shared-migration.ts), the same entry at the end of SQLite's list; and
 * the same change in the declared schema (sql/declared-schema.test.ts keeps
 * the two equal). Times are bigint epoch ms, as in the embedded store, so
 * both engines hand the domain the same numbers.
 */
export const PG_MIGRATIONS: (string | SharedMigration)[] = [
  `
  CREATE TABLE orgs (
    id text PRIMARY KEY, name text NOT NULL, is_default boolean NOT NULL DEFAULT false,
    created_at bigint NOT NULL, deleted_at bigint
  );
  -- One live default organization, even when two admin commands ask for it at once.
  CREATE UNIQUE INDEX orgs_one_default ON orgs (is_default) WHERE is_default AND deleted_at IS NULL;
  CREATE TABLE projects (
    id text PRIMARY KEY, org_id text NOT NULL, name text NOT NULL,
    api_enabled boolean NOT NULL, monthly_event_limit bigint,
    created_at bigint NOT NULL, deleted_at bigint
  );
  CREATE TABLE sources (
    id text PRIMARY KEY, project_id text NOT NULL, name text NOT NULL,
    filter_bots boolean NOT NULL, record_ip boolean NOT NULL,
    created_at bigint NOT NULL, deleted_at bigint
  );
  CREATE TABLE api_keys (
    id text PRIMARY KEY, source_id text NOT NULL, hash bytea NOT NULL UNIQUE, last_four text NOT NULL,
    created_at bigint NOT NULL, last_used_at bigint, expires_at bigint, revoked_at bigint
  );
  CREATE INDEX api_keys_source ON api_keys (source_id);

  CREATE TABLE persons (
    project_id text NOT NULL, id text NOT NULL, kind text NOT NULL CHECK (kind IN ('browser', 'server')),
    merged_into text, created_at bigint NOT NULL,
    PRIMARY KEY (project_id, id)
  );
  CREATE INDEX persons_merged_into ON persons (project_id, merged_into) WHERE merged_into IS NOT NULL;
  CREATE TABLE person_links (
    project_id text NOT NULL, distinct_id text NOT NULL, person_id text NOT NULL,
    PRIMARY KEY (project_id, distinct_id)
  );
  CREATE INDEX person_links_person ON person_links (project_id, person_id);
  CREATE TABLE person_traits (
    project_id text NOT NULL, person_id text NOT NULL, key text NOT NULL,
    value jsonb NOT NULL, set_at bigint NOT NULL,
    PRIMARY KEY (project_id, person_id, key)
  );

  -- Events are partitioned by day of their timestamp: analytics reads a time
  -- range, which then touches only the days it names, and retention drops a
  -- whole day's table instead of deleting rows one by one (no bloat, no long
  -- vacuum). Day tables are made ahead of time, outside any ingest transaction
  -- (see inlet_ensure_event_partition); a row whose day has no table yet lands
  -- in the default partition, so an insert never fails for want of one.
  -- There is no unique constraint here: on a partitioned table it would have
  -- to include the timestamp, so idempotency lives in insert_ids instead.
  CREATE TABLE events (
    seq bigserial NOT NULL, id uuid NOT NULL, project_id text NOT NULL, source_id text NOT NULL,
    event text NOT NULL, distinct_id text, anonymous_id text, person_id text NOT NULL, session_id text,
    "timestamp" bigint NOT NULL, received_at bigint NOT NULL, insert_id text, properties jsonb NOT NULL
  ) PARTITION BY RANGE ("timestamp");
  CREATE TABLE events_default PARTITION OF events DEFAULT;
  CREATE INDEX events_source_time ON events (source_id, "timestamp", seq);
  CREATE INDEX events_project_time ON events (project_id, "timestamp");

  CREATE TABLE insert_ids (
    source_id text NOT NULL, insert_id text NOT NULL, event_id uuid,
    PRIMARY KEY (source_id, insert_id)
  );
  CREATE TABLE usage (
    project_id text NOT NULL, month text NOT NULL, events bigint NOT NULL,
    PRIMARY KEY (project_id, month)
  );

${ENSURE_EVENT_PARTITION}  `,
  // Version 2: each project's raw-event retention, in days.
  'ALTER TABLE projects ADD COLUMN retention_days INTEGER NOT NULL DEFAULT 400;',
  // Version 3: distinct_ids of erased persons whose items are dropped until unsuppressed.
  `CREATE TABLE suppressed_ids (
    project_id text NOT NULL, distinct_id text NOT NULL, created_at bigint NOT NULL,
    PRIMARY KEY (project_id, distinct_id)
  );`,
  // Version 4: console accounts, sessions and sign-in throttling (accounts.ts).
  `
  CREATE TABLE users (
    id text PRIMARY KEY, email text NOT NULL UNIQUE, password_hash text NOT NULL,
    admin boolean NOT NULL, created_at bigint NOT NULL
  );
  CREATE TABLE memberships (user_id text NOT NULL, org_id text NOT NULL, PRIMARY KEY (user_id, org_id));
  CREATE TABLE sessions (
    token_hash bytea PRIMARY KEY, user_id text NOT NULL, csrf_token text NOT NULL,
    created_at bigint NOT NULL, last_seen_at bigint NOT NULL
  );
  CREATE TABLE login_failures (
    key text PRIMARY KEY, failures integer NOT NULL, first_at bigint NOT NULL, blocked_until bigint NOT NULL DEFAULT 0
  );
  `,
  // Version 5: erasures whose events are not all deleted yet (erasure.ts).
  `CREATE TABLE pending_erasures (
    id bigserial PRIMARY KEY, project_id text NOT NULL, person_ids text[] NOT NULL,
    through_seq bigint NOT NULL, touched_at bigint NOT NULL
  );`,
  // Version 6: where an event stands, by its id (paging before it). Ids are
  // UUIDv7 of their arrival time and each day table is written mostly in
  // arrival order, so block ranges summarise them tightly. A BRIN index costs
  // next to nothing at insert (a row widens its range's summary, if the range
  // has one yet; new ranges get one at VACUUM), where a B-tree would add a
  // random write per event.
  'CREATE INDEX events_id ON events USING brin (id);',
  // Version 7: accounts can be disabled; a user's sessions are found by
  // user, so a change of password or rights ends them all in one statement.
  `
  ALTER TABLE users ADD COLUMN disabled boolean NOT NULL DEFAULT false;
  CREATE INDEX sessions_user ON sessions (user_id);
  `,
  // Version 8: the console's list of people, newest first, read a page at a time (listings.ts).
  'CREATE INDEX persons_newest ON persons (project_id, created_at, id COLLATE "C") WHERE merged_into IS NULL;',
  // Version 9: an erased person's own ids are suppressed too (an item's
  // anonymous_id names one), each with the person of its erasure, and a
  // suppressed distinct_id names that person, so unsuppressing it lifts them.
  `
  ALTER TABLE suppressed_ids ADD COLUMN person_id text;
  CREATE TABLE suppressed_persons (
    project_id text NOT NULL, person_id text NOT NULL, erased_person_id text NOT NULL, created_at bigint NOT NULL,
    PRIMARY KEY (project_id, person_id)
  );
  `,
  // Version 10: what became of every item (sql/outcomes.ts): counts per
  // source, minute, outcome and code, which servers add to, and refused or
  // dropped items kept as samples, found by code, by project (the bound in
  // bytes, retention) and by the ids they sent (erasure).
  `
  CREATE TABLE outcome_counts (
    source_id text NOT NULL, minute bigint NOT NULL, outcome text NOT NULL, code text NOT NULL,
    project_id text NOT NULL, count bigint NOT NULL,
    PRIMARY KEY (source_id, minute, outcome, code)
  );
  CREATE INDEX outcome_counts_project ON outcome_counts (project_id, minute);
  CREATE TABLE item_samples (
    id bigserial PRIMARY KEY, project_id text NOT NULL, source_id text NOT NULL,
    outcome text NOT NULL, code text NOT NULL, codes text NOT NULL, errors text NOT NULL,
    item text NOT NULL, cut boolean NOT NULL, bytes integer NOT NULL, received_at bigint NOT NULL,
    request_id text NOT NULL, item_index integer NOT NULL, distinct_id text, anonymous_id text
  );
  CREATE INDEX item_samples_source ON item_samples (source_id, id);
  CREATE INDEX item_samples_code ON item_samples (source_id, code, id);
  CREATE INDEX item_samples_project ON item_samples (project_id, id);
  CREATE INDEX item_samples_received ON item_samples (project_id, received_at);
  CREATE INDEX item_samples_distinct ON item_samples (project_id, distinct_id) WHERE distinct_id IS NOT NULL;
  CREATE INDEX item_samples_anonymous ON item_samples (project_id, anonymous_id) WHERE anonymous_id IS NOT NULL;
  `,
  // Version 11: destinations, each
  // with its cursor and lease (port-destinations.ts). A destination reads its
  // project's events by seq: a BRIN index, like events_id, costs next to
  // nothing at insert, and seqs grow along each day table. autosummarize
  // keeps the newest ranges summarised, or each read would scan them whole.
  `
  CREATE TABLE destinations (
    id text PRIMARY KEY, project_id text NOT NULL, kind text NOT NULL, url text NOT NULL, table_name text,
    sources text NOT NULL, events text NOT NULL, secret text, paused boolean NOT NULL,
    cursor_seq bigint NOT NULL, generation integer NOT NULL, delivered bigint NOT NULL,
    last_error text, last_delivered_at bigint, lease_holder text, lease_until bigint NOT NULL,
    created_at bigint NOT NULL
  );
  CREATE INDEX destinations_project ON destinations (project_id);
  CREATE INDEX events_seq ON events USING brin (seq) WITH (autosummarize = on);
  `,
  // Version 12: groups (their types, traits and members) and unset traits
  // (a row marked unset, ordered by set_at as a value is; reads skip it).
  `
  ALTER TABLE person_traits ADD COLUMN unset boolean NOT NULL DEFAULT false;
  CREATE TABLE group_types (
    project_id text NOT NULL, group_type text NOT NULL, created_at bigint NOT NULL,
    PRIMARY KEY (project_id, group_type)
  );
  CREATE TABLE project_groups (
    project_id text NOT NULL, group_type text NOT NULL, group_key text NOT NULL, created_at bigint NOT NULL,
    PRIMARY KEY (project_id, group_type, group_key)
  );
  CREATE TABLE group_traits (
    project_id text NOT NULL, group_type text NOT NULL, group_key text NOT NULL, key text NOT NULL,
    value jsonb NOT NULL, set_at bigint NOT NULL,
    PRIMARY KEY (project_id, group_type, group_key, key)
  );
  CREATE TABLE group_members (
    project_id text NOT NULL, group_type text NOT NULL, group_key text NOT NULL, person_id text NOT NULL, created_at bigint NOT NULL,
    PRIMARY KEY (project_id, group_type, group_key, person_id)
  );
  CREATE INDEX group_members_person ON group_members (project_id, person_id);
  `,
  // Version 13: deleting a project or an organization now deletes its
  // destinations (sql/admin.ts); those of projects deleted before still held
  // their URLs and secrets, and went on being delivered.
  `
  DELETE FROM destinations WHERE NOT EXISTS (
    SELECT 1 FROM projects p JOIN orgs o ON o.id = p.org_id
    WHERE p.id = destinations.project_id AND p.deleted_at IS NULL AND o.deleted_at IS NULL
  );
  `,
  // Version 14: samples an erasure finds by an alias's previous_id (from now
  // on: an older sample's item is not read back for it); every
  // sample weighs what it stores (its errors too, which one item could make
  // megabytes of); samples of suppressed people keep nothing of what was sent.
  `
  ALTER TABLE item_samples ADD COLUMN previous_id text;
  UPDATE item_samples SET item = 'null', cut = false, errors = '[]', distinct_id = NULL, anonymous_id = NULL
    WHERE (outcome = 'dropped' AND code = 'suppressed')
      OR distinct_id IN (SELECT s.distinct_id FROM suppressed_ids s WHERE s.project_id = item_samples.project_id)
      OR anonymous_id IN (SELECT s.person_id FROM suppressed_persons s WHERE s.project_id = item_samples.project_id);
  UPDATE item_samples SET bytes = 64 + octet_length(item) + octet_length(errors) + octet_length(code) + octet_length(codes)
    + octet_length(request_id) + coalesce(octet_length(distinct_id), 0) + coalesce(octet_length(anonymous_id), 0)
    + coalesce(octet_length(previous_id), 0) + octet_length(project_id) + octet_length(source_id);
  CREATE INDEX item_samples_previous ON item_samples (project_id, previous_id) WHERE previous_id IS NOT NULL;
  `,
  // Version 15: a destination's settings of its kind in one JSON object,
  // config (port-destinations.ts): the columns url, table_name and secret
  // become its keys, kept as they were (a secret whole: requests are signed
  // with it), so that a new kind needs no column (docs/design.md, "Adding a
  // destination kind"). Servers of an older version read those columns and
  // would deliver nothing (or fail every destination) once they are gone; a
  // lease one of them holds shows it runs, so the step refuses to start while
  // one is held (OLDER_SERVERS_DELIVER) and says to stop them first.
  `
  DO $$ BEGIN
    IF EXISTS (SELECT 1 FROM destinations WHERE lease_holder IS NOT NULL
               AND lease_until > (extract(epoch FROM clock_timestamp()) * 1000)::bigint) THEN
      RAISE EXCEPTION USING ERRCODE = '${OLDER_SERVERS_DELIVER}', MESSAGE =
        'Servers of an older Inlet are delivering destinations from this database, and this version moves '
        || 'the destinations'' settings where they would no longer find them. Stop every older server, then '
        || 'start this one (docs/production.md, "Upgrades").';
    END IF;
  END $$;
  ALTER TABLE destinations ADD COLUMN config text NOT NULL DEFAULT '{}';
  UPDATE destinations SET config = jsonb_strip_nulls(jsonb_build_object('url', url, 'table', table_name, 'secret', secret))::text;
  ALTER TABLE destinations ALTER COLUMN config DROP DEFAULT, DROP COLUMN url, DROP COLUMN table_name, DROP COLUMN secret;
  `,
  // Version 16: tracking plans, their versions, and each source's plan (sql/plans-migration.ts).
  PLANS_MIGRATION,
  // Version 17: paused_reason and file_plan (sql/destination-files-step.ts).
  DESTINATION_FILES_STEP,
  // Version 18: a tracking plan's warned and refused items by event (sql/outcome-events-migration.ts).
  OUTCOME_EVENTS_MIGRATION,
  // Version 19: a person's events by person, folded in off the request path (sql/person-events-step.ts).
  PERSON_EVENTS_STEP,
  // Version 20: merged persons by id, for the join that finds an event's person (sql/persons-merged-step.ts).
  PERSONS_MERGED_STEP,
];

/**
 * Brings the schema up to date. A session advisory lock makes servers that
 * start at once take turns: the first applies what is missing, the others
 * then find nothing left to do. Each version commits with its own row in
 * schema_migrations, so a failed start leaves a consistent version behind.
 * A new database is made from the declared schema at the current version
 * (every version recorded, in one transaction); `history` makes it take
 * every step instead, for the test that requires both paths to end at the
 * same schema.
 */
export async function migrate(url: string, connectMs: number, fresh: 'declared' | 'history' = 'declared'): Promise<void> {
  // A connection of its own, without the pool's statement timeout: waiting
  // for another server's migration, or a long one, is expected at start-up.
  const client = await connect(url, connectMs, 'inlet-migrate');
  /** Runs `sql` and records the versions up to `through` in one transaction. */
  const apply = async (sql: string, from: number, through: number): Promise<void> => {
    await client.query('BEGIN');
    try {
      await client.query(sql);
      await client.query('INSERT INTO schema_migrations (version, applied_at) SELECT v, $3 FROM generate_series($1::int, $2::int) v', [from, through, Date.now()]);
      await client.query('COMMIT');
    } catch (e) {
      // The migration's own error is the one worth reporting.
      await client.query('ROLLBACK').catch(() => {});
      if ((e as { code?: unknown }).code === OLDER_SERVERS_DELIVER) throw new StoreUnavailableError((e as Error).message, { cause: e, refused: true });
      throw e;
    }
  };
  try {
    await client.query('SELECT pg_advisory_lock($1::int, 0)', [LOCK_NS.migrations]);
    await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at bigint NOT NULL)');
    const { rows } = await client.query<{ v: number | null }>('SELECT max(version) AS v FROM schema_migrations');
    const current = rows[0]?.v ?? null;
    if (current === null && fresh === 'declared') {
      await apply(`${renderMigration(DECLARED_SCHEMA, 'postgres')}\n${POSTGRES_OWN_SCHEMA}`, 1, PG_MIGRATIONS.length);
      return;
    }
    for (let v = (current ?? 0) + 1; v <= PG_MIGRATIONS.length; v++) {
      const step = PG_MIGRATIONS[v - 1]!;
      await apply(typeof step === 'string' ? step : renderMigration(step, 'postgres'), v, v);
    }
  } finally {
    // Ending the session releases the advisory lock too.
    await client.end();
  }
}

/**
 * Whether the database holds Inlet's schema (a migration was applied);
 * reads only, so a database without it is left as it was.
 */
export async function hasPostgresSchema(url: string, connectMs: number): Promise<boolean> {
  const client = await connect(url, connectMs, 'inlet-check');
  try {
    const { rows } = await client.query<{ present: boolean }>("SELECT to_regclass('schema_migrations') IS NOT NULL AS present");
    if (!rows[0]?.present) return false;
    const applied = await client.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations');
    return (applied.rows[0]?.n ?? 0) > 0;
  } finally {
    await client.end();
  }
}

/** A connection of its own to the database, or the port's error that says where it was looked for. */
async function connect(url: string, connectMs: number, name: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: connectMs, application_name: name });
  client.on('error', () => {});
  try {
    await client.connect();
    return client;
  } catch (e) {
    throw new StoreUnavailableError(
      `Could not reach PostgreSQL at ${whereIs(url)} (${(e as Error).message}). Check that it is running and that INLET_DATABASE_URL names it.`,
      { cause: e },
    );
  }
}

/** Host, port and database of a connection URL, for messages: never its user or password. */
export function whereIs(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || '5432'}${u.pathname.length > 1 ? u.pathname : ''}`;
  } catch {
    return 'the database URL given';
  }
}
