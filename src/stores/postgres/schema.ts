import { LOCK_NS } from './pool.js';

/**
 * The function that makes a day's table of events (postgres/partitions.ts
 * calls it), as version 1 made it (migrations.ts) and a new database's schema
 * makes it. Frozen like the step it belongs to: a change is a new step that
 * replaces it.
 */
export const ENSURE_EVENT_PARTITION = `
  -- Makes the table of one UTC day (day_start in epoch ms) unless it exists.
  -- Rows of that day already in the default partition are moved into it in the
  -- same transaction, since a partition cannot be attached while the default
  -- one still holds rows of its range. Names and bounds are formatted here,
  -- from the one bigint argument, so callers pass it as a parameter.
  CREATE FUNCTION inlet_ensure_event_partition(day_start bigint) RETURNS boolean
  LANGUAGE plpgsql AS $fn$
  DECLARE
    day_end bigint := day_start + 86400000;
    part text := 'events_' || to_char(to_timestamp(day_start / 1000) AT TIME ZONE 'UTC', 'YYYYMMDD');
  BEGIN
    IF day_start % 86400000 <> 0 THEN
      RAISE EXCEPTION 'day_start % is not midnight UTC', day_start;
    END IF;
    IF to_regclass(part) IS NOT NULL THEN
      RETURN false;
    END IF;
    -- Attaching locks the default partition; ingest must wait for it briefly
    -- at most, so give up rather than queue (the next run tries again).
    PERFORM set_config('lock_timeout', '2s', true);
    PERFORM pg_advisory_xact_lock(${LOCK_NS.partitions}, 0);
    IF to_regclass(part) IS NOT NULL THEN
      RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE %I (LIKE events)', part);
    EXECUTE format(
      'WITH moved AS (DELETE FROM events_default WHERE "timestamp" >= %s AND "timestamp" < %s RETURNING *) INSERT INTO %I SELECT * FROM moved',
      day_start, day_end, part);
    EXECUTE format('ALTER TABLE events ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)', part, day_start, day_end);
    RETURN true;
  END
  $fn$;
`;


/**
 * What only PostgreSQL's schema has, made after the declared one
 * (sql/declared-schema.ts) when a database is new: the events table's
 * default partition (day tables are made ahead, partitions.ts) and its
 * indexes, B-tree by source and project and BRIN by id and seq (a BRIN index
 * costs next to nothing at insert, where a B-tree adds a random write per
 * event; autosummarize keeps the newest ranges summarised for destinations'
 * reads by seq); insert_ids, since a unique constraint on a partitioned table
 * would have to include the timestamp; one live default organization, even
 * when two admin commands ask for it at once.
 */
export const POSTGRES_OWN_SCHEMA = `
  CREATE UNIQUE INDEX orgs_one_default ON orgs (is_default) WHERE is_default AND deleted_at IS NULL;
  CREATE TABLE events_default PARTITION OF events DEFAULT;
  CREATE INDEX events_source_time ON events (source_id, "timestamp", seq);
  CREATE INDEX events_project_time ON events (project_id, "timestamp");
  CREATE INDEX events_id ON events USING brin (id);
  CREATE INDEX events_seq ON events USING brin (seq) WITH (autosummarize = on);
  CREATE TABLE insert_ids (
    source_id text NOT NULL, insert_id text NOT NULL, event_id uuid,
    PRIMARY KEY (source_id, insert_id)
  );
  ${ENSURE_EVENT_PARTITION}
`;
