import { PERSON_EVENTS_STEP } from '../sql/person-events-step.js';
import { PERSONS_MERGED_STEP } from '../sql/persons-merged-step.js';
import { DESTINATION_FILES_STEP } from '../sql/destination-files-step.js';
import type { SharedMigration } from '../sql/shared-migration.js';
import { PLANS_MIGRATION } from '../sql/plans-migration.js';
import { OUTCOME_EVENTS_MIGRATION } from '../sql/outcome-events-migration.js';
import { moveToInsertIdSlots } from './migration-v2.js';
import type { Db } from './open.js';

/**
 * A step of the schema: SQL, frozen code for what SQL alone cannot do (a
 * file of its own that imports nothing of the live code, so that editing
 * that code never changes a shipped step), or a step declared once for both
 * engines (sql/shared-migration.ts), the same entry at the end of
 * PostgreSQL's list.
 */
export type Migration = string | ((db: Db) => void) | SharedMigration;

/**
 * Versioned schema of the embedded store: the way every older database
 * reaches the current version (a new one is made from sql/declared-schema.ts
 * and schema.ts). A migration is never edited once shipped; a change is a new
 * entry at the end, and the same change in the declared schema
 * (sql/declared-schema.test.ts keeps the two equal).
 */
export const SQLITE_MIGRATIONS: Migration[] = [
  `
  CREATE TABLE orgs (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, is_default INTEGER NOT NULL DEFAULT 0,
    created_at INTEGER NOT NULL, deleted_at INTEGER
  );
  CREATE TABLE projects (
    id TEXT PRIMARY KEY, org_id TEXT NOT NULL, name TEXT NOT NULL,
    api_enabled INTEGER NOT NULL, monthly_event_limit INTEGER,
    created_at INTEGER NOT NULL, deleted_at INTEGER
  );
  CREATE TABLE sources (
    id TEXT PRIMARY KEY, project_id TEXT NOT NULL, name TEXT NOT NULL,
    filter_bots INTEGER NOT NULL, record_ip INTEGER NOT NULL,
    created_at INTEGER NOT NULL, deleted_at INTEGER
  );
  CREATE TABLE api_keys (
    id TEXT PRIMARY KEY, source_id TEXT NOT NULL, hash BLOB NOT NULL UNIQUE, last_four TEXT NOT NULL,
    created_at INTEGER NOT NULL, last_used_at INTEGER, expires_at INTEGER, revoked_at INTEGER
  );
  CREATE INDEX api_keys_source ON api_keys (source_id);

  CREATE TABLE persons (
    project_id TEXT NOT NULL, id TEXT NOT NULL, kind TEXT NOT NULL, merged_into TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, id)
  ) WITHOUT ROWID;
  CREATE INDEX persons_merged_into ON persons (project_id, merged_into) WHERE merged_into IS NOT NULL;
  CREATE TABLE person_links (
    project_id TEXT NOT NULL, distinct_id TEXT NOT NULL, person_id TEXT NOT NULL,
    PRIMARY KEY (project_id, distinct_id)
  ) WITHOUT ROWID;
  CREATE INDEX person_links_person ON person_links (project_id, person_id);
  CREATE TABLE person_traits (
    project_id TEXT NOT NULL, person_id TEXT NOT NULL, key TEXT NOT NULL,
    value TEXT NOT NULL, set_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, person_id, key)
  ) WITHOUT ROWID;

  -- seq is the rowid: appends stay at the end of the table.
  CREATE TABLE events (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL, project_id TEXT NOT NULL, source_id TEXT NOT NULL,
    event TEXT NOT NULL, distinct_id TEXT, anonymous_id TEXT, person_id TEXT NOT NULL, session_id TEXT,
    timestamp INTEGER NOT NULL, received_at INTEGER NOT NULL, insert_id TEXT, properties TEXT NOT NULL
  );
  CREATE INDEX events_source_time ON events (source_id, timestamp, seq);
  -- Idempotency lives in its own table, so the events table can be laid out for reads.
  CREATE TABLE insert_ids (
    source_id TEXT NOT NULL, insert_id TEXT NOT NULL, event_id TEXT,
    PRIMARY KEY (source_id, insert_id)
  ) WITHOUT ROWID;
  CREATE TABLE usage (
    project_id TEXT NOT NULL, month TEXT NOT NULL, events INTEGER NOT NULL,
    PRIMARY KEY (project_id, month)
  ) WITHOUT ROWID;
  `,
  moveToInsertIdSlots,
  // Version 3: new insert_ids wait in memory and reached the slots a slice per
  // commit. Every pair stored so far already has its slot.
  `
  CREATE TABLE insert_id_index_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    events_through INTEGER NOT NULL, claims_through INTEGER NOT NULL
  );
  INSERT INTO insert_id_index_state (id, events_through, claims_through)
    VALUES (1, coalesce((SELECT max(seq) FROM events), 0), coalesce((SELECT max(seq) FROM identify_claims), 0));
  `,
  // Version 4: events are indexed by minute in a table of their own, a few
  // thousand at a time (event-minute-index.ts), instead of by an index on the
  // events table that every commit wrote to in dozens of places.
  `
  CREATE TABLE event_minutes (
    source_id TEXT NOT NULL, minute INTEGER NOT NULL, seq INTEGER NOT NULL,
    PRIMARY KEY (source_id, minute, seq)
  ) WITHOUT ROWID;
  INSERT INTO event_minutes (source_id, minute, seq) SELECT source_id, timestamp / 60000, seq FROM events ORDER BY 1, 2, 3;
  DROP INDEX events_source_minute;
  CREATE TABLE event_minutes_state (id INTEGER PRIMARY KEY CHECK (id = 1), through INTEGER NOT NULL);
  INSERT INTO event_minutes_state (id, through) VALUES (1, coalesce((SELECT max(seq) FROM events), 0));
  `,
  // Version 5: a merge of the minute index writes one row per source and
  // minute, listing that minute's seqs, instead of one row per event: a
  // merge of 2,048 events wrote about 155 WAL pages, and now about 45
  // (event-minute-index.ts). Existing rows are packed 2,048 seqs' worth at a time.
  `
  CREATE TABLE event_minute_runs (
    source_id TEXT NOT NULL, minute INTEGER NOT NULL, last_seq INTEGER NOT NULL, seqs TEXT NOT NULL,
    PRIMARY KEY (source_id, minute, last_seq)
  ) WITHOUT ROWID;
  INSERT INTO event_minute_runs (source_id, minute, last_seq, seqs)
    SELECT source_id, minute, max(seq), json_group_array(seq) FROM event_minutes GROUP BY source_id, minute, seq / 2048;
  DROP TABLE event_minutes;
  `,
  // Version 6: each project's raw-event retention, in days.
  'ALTER TABLE projects ADD COLUMN retention_days INTEGER NOT NULL DEFAULT 400;',
  // Version 7: distinct_ids of erased persons whose items are dropped until unsuppressed.
  `CREATE TABLE suppressed_ids (
    project_id TEXT NOT NULL, distinct_id TEXT NOT NULL, created_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, distinct_id)
  ) WITHOUT ROWID;`,
  // Version 8: console accounts, sessions and sign-in throttling (accounts.ts).
  `
  CREATE TABLE users (
    id TEXT PRIMARY KEY, email TEXT NOT NULL UNIQUE, password_hash TEXT NOT NULL,
    admin INTEGER NOT NULL, created_at INTEGER NOT NULL
  );
  CREATE TABLE memberships (user_id TEXT NOT NULL, org_id TEXT NOT NULL, PRIMARY KEY (user_id, org_id)) WITHOUT ROWID;
  CREATE TABLE sessions (
    token_hash BLOB PRIMARY KEY, user_id TEXT NOT NULL, csrf_token TEXT NOT NULL,
    created_at INTEGER NOT NULL, last_seen_at INTEGER NOT NULL
  );
  CREATE TABLE login_failures (
    key TEXT PRIMARY KEY, failures INTEGER NOT NULL, first_at INTEGER NOT NULL, blocked_until INTEGER NOT NULL DEFAULT 0
  ) WITHOUT ROWID;
  `,
  // Version 9: insert_ids are found through a table in memory, filled from
  // the event rows and identify claims (insert-ids.ts); the slots on disk go.
  `
  DROP TABLE insert_id_slots;
  DROP TABLE insert_id_index_state;
  `,
  // Version 10: erasures whose events are not all deleted yet (erasure.ts).
  `CREATE TABLE pending_erasures (
    id INTEGER PRIMARY KEY, project_id TEXT NOT NULL, person_ids TEXT NOT NULL,
    through_seq INTEGER NOT NULL, touched_at INTEGER NOT NULL
  );`,
  // Version 11: accounts can be disabled; a user's sessions are found by
  // user, so a change of password or rights ends them all in one statement.
  `
  ALTER TABLE users ADD COLUMN disabled INTEGER NOT NULL DEFAULT 0;
  CREATE INDEX sessions_user ON sessions (user_id);
  `,
  // Version 12: the console's list of people, newest first, read a page at a time (listings.ts).
  'CREATE INDEX persons_newest ON persons (project_id, created_at, id) WHERE merged_into IS NULL;',
  // Version 13: an erased person's own ids are suppressed too (an item's
  // anonymous_id names one), each with the person of its erasure, and a
  // suppressed distinct_id names that person, so unsuppressing it lifts them.
  `
  ALTER TABLE suppressed_ids ADD COLUMN person_id TEXT;
  CREATE TABLE suppressed_persons (
    project_id TEXT NOT NULL, person_id TEXT NOT NULL, erased_person_id TEXT NOT NULL, created_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, person_id)
  ) WITHOUT ROWID;
  `,
  // Version 14: what became of every item (sql/outcomes.ts): counts per
  // source, minute, outcome and code, which servers add to, and refused or
  // dropped items kept as samples, found by code, by project (the bound in
  // bytes, retention) and by the ids they sent (erasure).
  `
  CREATE TABLE outcome_counts (
    source_id TEXT NOT NULL, minute INTEGER NOT NULL, outcome TEXT NOT NULL, code TEXT NOT NULL,
    project_id TEXT NOT NULL, count INTEGER NOT NULL,
    PRIMARY KEY (source_id, minute, outcome, code)
  ) WITHOUT ROWID;
  CREATE INDEX outcome_counts_project ON outcome_counts (project_id, minute);
  CREATE TABLE item_samples (
    id INTEGER PRIMARY KEY AUTOINCREMENT, project_id TEXT NOT NULL, source_id TEXT NOT NULL,
    outcome TEXT NOT NULL, code TEXT NOT NULL, codes TEXT NOT NULL, errors TEXT NOT NULL,
    item TEXT NOT NULL, cut INTEGER NOT NULL, bytes INTEGER NOT NULL, received_at INTEGER NOT NULL,
    request_id TEXT NOT NULL, item_index INTEGER NOT NULL, distinct_id TEXT, anonymous_id TEXT
  );
  CREATE INDEX item_samples_source ON item_samples (source_id, id);
  CREATE INDEX item_samples_code ON item_samples (source_id, code, id);
  CREATE INDEX item_samples_project ON item_samples (project_id, id);
  CREATE INDEX item_samples_received ON item_samples (project_id, received_at);
  CREATE INDEX item_samples_distinct ON item_samples (project_id, distinct_id) WHERE distinct_id IS NOT NULL;
  CREATE INDEX item_samples_anonymous ON item_samples (project_id, anonymous_id) WHERE anonymous_id IS NOT NULL;
  `,
  // Version 15: destinations, each
  // with its cursor and lease (port-destinations.ts). A destination reads its
  // project's events by seq, the rowid: no index is needed.
  `
  CREATE TABLE destinations (
    id TEXT PRIMARY KEY, project_id TEXT NOT NULL, kind TEXT NOT NULL, url TEXT NOT NULL, table_name TEXT,
    sources TEXT NOT NULL, events TEXT NOT NULL, secret TEXT, paused INTEGER NOT NULL,
    cursor_seq INTEGER NOT NULL, generation INTEGER NOT NULL, delivered INTEGER NOT NULL,
    last_error TEXT, last_delivered_at INTEGER, lease_holder TEXT, lease_until INTEGER NOT NULL,
    created_at INTEGER NOT NULL
  );
  CREATE INDEX destinations_project ON destinations (project_id);
  `,
  // Version 16: groups (their types, traits and members) and unset traits
  // (a row marked unset, ordered by set_at as a value is; reads skip it).
  `
  ALTER TABLE person_traits ADD COLUMN unset INTEGER NOT NULL DEFAULT 0;
  CREATE TABLE group_types (
    project_id TEXT NOT NULL, group_type TEXT NOT NULL, created_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, group_type)
  ) WITHOUT ROWID;
  CREATE TABLE project_groups (
    project_id TEXT NOT NULL, group_type TEXT NOT NULL, group_key TEXT NOT NULL, created_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, group_type, group_key)
  ) WITHOUT ROWID;
  CREATE TABLE group_traits (
    project_id TEXT NOT NULL, group_type TEXT NOT NULL, group_key TEXT NOT NULL, key TEXT NOT NULL,
    value TEXT NOT NULL, set_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, group_type, group_key, key)
  ) WITHOUT ROWID;
  CREATE TABLE group_members (
    project_id TEXT NOT NULL, group_type TEXT NOT NULL, group_key TEXT NOT NULL, person_id TEXT NOT NULL, created_at INTEGER NOT NULL,
    PRIMARY KEY (project_id, group_type, group_key, person_id)
  ) WITHOUT ROWID;
  CREATE INDEX group_members_person ON group_members (project_id, person_id);
  `,
  // Version 17: deleting a project or an organization now deletes its
  // destinations (sql/admin.ts); those of projects deleted before still held
  // their URLs and secrets, and went on being delivered.
  `
  DELETE FROM destinations WHERE NOT EXISTS (
    SELECT 1 FROM projects p JOIN orgs o ON o.id = p.org_id
    WHERE p.id = destinations.project_id AND p.deleted_at IS NULL AND o.deleted_at IS NULL
  );
  `,
  // Version 18: samples an erasure finds by an alias's previous_id (from now
  // on: an older sample's item is not read back for it); every
  // sample weighs what it stores (its errors too, which one item could make
  // megabytes of); samples of suppressed people keep nothing of what was sent.
  `
  ALTER TABLE item_samples ADD COLUMN previous_id TEXT;
  UPDATE item_samples SET item = 'null', cut = 0, errors = '[]', distinct_id = NULL, anonymous_id = NULL
    WHERE (outcome = 'dropped' AND code = 'suppressed')
      OR distinct_id IN (SELECT s.distinct_id FROM suppressed_ids s WHERE s.project_id = item_samples.project_id)
      OR anonymous_id IN (SELECT s.person_id FROM suppressed_persons s WHERE s.project_id = item_samples.project_id);
  UPDATE item_samples SET bytes = 64 + length(CAST(item AS BLOB)) + length(CAST(errors AS BLOB)) + length(CAST(code AS BLOB)) + length(codes)
    + length(CAST(request_id AS BLOB)) + coalesce(length(CAST(distinct_id AS BLOB)), 0) + coalesce(length(CAST(anonymous_id AS BLOB)), 0)
    + coalesce(length(CAST(previous_id AS BLOB)), 0) + length(project_id) + length(source_id);
  CREATE INDEX item_samples_previous ON item_samples (project_id, previous_id) WHERE previous_id IS NOT NULL;
  `,
  // Version 19: a destination's settings of its kind in one JSON object,
  // config (port-destinations.ts): the columns url, table_name and secret
  // become its keys, kept as they were (a secret whole: requests are signed
  // with it), so that a new kind needs no column (docs/design.md, "Adding a
  // destination kind").
  `
  ALTER TABLE destinations ADD COLUMN config TEXT NOT NULL DEFAULT '{}';
  UPDATE destinations SET config = json_object('url', url);
  UPDATE destinations SET config = json_set(config, '$.table', table_name) WHERE table_name IS NOT NULL;
  UPDATE destinations SET config = json_set(config, '$.secret', secret) WHERE secret IS NOT NULL;
  ALTER TABLE destinations DROP COLUMN url;
  ALTER TABLE destinations DROP COLUMN table_name;
  ALTER TABLE destinations DROP COLUMN secret;
  `,
  // Version 20: tracking plans, their versions, and each source's plan (sql/plans-migration.ts).
  PLANS_MIGRATION,
  // Version 21: paused_reason and file_plan (sql/destination-files-step.ts).
  DESTINATION_FILES_STEP,
  // Version 22: a tracking plan's warned and refused items by event (sql/outcome-events-migration.ts).
  OUTCOME_EVENTS_MIGRATION,
  // Version 23: a person's events by person, folded in off the request path (sql/person-events-step.ts).
  PERSON_EVENTS_STEP,
  // Version 24: merged persons by id, for the join that finds an event's person (sql/persons-merged-step.ts).
  PERSONS_MERGED_STEP,
];
