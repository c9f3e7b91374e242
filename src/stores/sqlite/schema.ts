/**
 * What only SQLite's schema has, made after the declared one
 * (sql/declared-schema.ts) when a database is new: the minute index of
 * events, merged a few thousand events at a time into runs of seqs
 * (event-minute-index.ts), with how far it has reached; and the insert_ids
 * of identify calls, which the table of insert_ids in memory is filled from
 * along with the event rows (insert-ids.ts).
 */
export const SQLITE_OWN_SCHEMA = `
  CREATE TABLE identify_claims (seq INTEGER PRIMARY KEY, source_id TEXT NOT NULL, insert_id TEXT NOT NULL);
  CREATE TABLE event_minute_runs (
    source_id TEXT NOT NULL, minute INTEGER NOT NULL, last_seq INTEGER NOT NULL, seqs TEXT NOT NULL,
    PRIMARY KEY (source_id, minute, last_seq)
  ) WITHOUT ROWID;
  CREATE TABLE event_minutes_state (id INTEGER PRIMARY KEY CHECK (id = 1), through INTEGER NOT NULL);
  INSERT INTO event_minutes_state (id, through) VALUES (1, 0);
`;
