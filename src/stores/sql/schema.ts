import type { ColumnType, Generated } from 'kysely';

/**
 * A yes/no column: boolean on PostgreSQL, INTEGER 0/1 on SQLite. Written as a
 * boolean (the SQLite connection binds true/false as 1/0, see
 * sqlite/sql-engine.ts) and read through `isSet` (rows.ts), so no query
 * spells either engine's form.
 */
export type Flag = ColumnType<boolean | number, boolean, boolean>;
/** A Flag the table fills with its default when an insert leaves it out. */
export type FlagWithDefault = ColumnType<boolean | number, boolean | undefined, boolean>;

/**
 * Epoch milliseconds, and every other bigint: numbers on both engines (the
 * PostgreSQL pool parses int8 as a number, postgres/pool.ts; every value kept
 * fits a double exactly).
 */
type Ms = number;

/**
 * JSON: jsonb on PostgreSQL, TEXT on SQLite. Read only as text, through the
 * engine's `jsonText` (SqlEngine, port.ts), and parsed once by the caller: the drivers
 * would otherwise hand back a string on one engine and a value on the other.
 */
export type Json = ColumnType<unknown, string, string>;

/** The tables that the queries written once (admin, accounts, listings, reads, event pages, erasure, retention) read and write, as both engines keep them. */
export interface Database {
  orgs: { id: string; name: string; is_default: FlagWithDefault; created_at: Ms; deleted_at: Ms | null };
  projects: {
    id: string; org_id: string; name: string; api_enabled: Flag; monthly_event_limit: number | null;
    retention_days: Generated<number>; created_at: Ms; deleted_at: Ms | null;
  };
  sources: {
    id: string; project_id: string; name: string; filter_bots: Flag; record_ip: Flag; created_at: Ms; deleted_at: Ms | null;
    plan_id: ColumnType<string | null, string | null | undefined, string | null>;
    plan_version: ColumnType<number | null, number | null | undefined, number | null>;
    plan_mode: ColumnType<string, string | undefined, string>;
    unplanned_events: ColumnType<string | null, string | null | undefined, string | null>;
  };
  plans: { id: string; project_id: string; name: string; created_at: Ms };
  plan_versions: { plan_id: string; version: number; rules: string; created_at: Ms };
  api_keys: {
    id: string; source_id: string; hash: Buffer; last_four: string; created_at: Ms;
    last_used_at: Ms | null; expires_at: Ms | null; revoked_at: Ms | null;
  };
  users: { id: string; email: string; password_hash: string; admin: Flag; disabled: FlagWithDefault; created_at: Ms };
  memberships: { user_id: string; org_id: string };
  sessions: { token_hash: Buffer; user_id: string; csrf_token: string; created_at: Ms; last_seen_at: Ms };
  login_failures: { key: string; failures: number; first_at: Ms; blocked_until: Generated<Ms> };
  persons: { project_id: string; id: string; kind: string; merged_into: string | null; created_at: Ms };
  person_links: { project_id: string; distinct_id: string; person_id: string };
  /** unset: the trait was unset at set_at (a tombstone, its value a JSON null); reads skip it. */
  person_traits: { project_id: string; person_id: string; key: string; value: Json; set_at: Ms; unset: FlagWithDefault };
  group_types: { project_id: string; group_type: string; created_at: Ms };
  project_groups: { project_id: string; group_type: string; group_key: string; created_at: Ms };
  group_traits: { project_id: string; group_type: string; group_key: string; key: string; value: Json; set_at: Ms };
  group_members: { project_id: string; group_type: string; group_key: string; person_id: string; created_at: Ms };
  usage: { project_id: string; month: string; events: number };
  /** `seq` places an event among those of equal timestamp; `id` is a UUID (uuid on PostgreSQL, lower-case TEXT on SQLite). */
  events: {
    seq: Generated<number>; id: string; project_id: string; source_id: string; event: string;
    distinct_id: string | null; anonymous_id: string | null; person_id: string; session_id: string | null;
    timestamp: Ms; received_at: Ms; insert_id: string | null; properties: Json;
  };
  /** person_id: the person erased with the distinct_id; null where it was suppressed before person ids were. */
  suppressed_ids: { project_id: string; distinct_id: string; created_at: Ms; person_id: string | null };
  /** A person id suppressed by the erasure of `erased_person_id` (itself, or the person it was merged into). */
  suppressed_persons: { project_id: string; person_id: string; erased_person_id: string; created_at: Ms };
  /**
   * A key per event folded in (sql/person-events.ts), in sorted runs: `run`
   * the run that holds it, then the event's person when stored, its
   * timestamp and seq. A run holds a person's newest keys only (PERSON_EVENTS_KEPT).
   */
  person_events: { project_id: string; run: number; person_id: string; timestamp: Ms; seq: number };
  /** Per project, the seq through which its events are in person_events, and the number of the last run made. */
  person_events_folded: { project_id: string; through: number; last_run: number };
  /**
   * A project's runs of person_events and their keys when written. While a
   * merge is under way its runs say which run they go into (`merging_into`),
   * and that run the person through which they went (`merged_through`).
   */
  person_event_runs: { project_id: string; run: number; keys: number; merging_into: number | null; merged_through: string | null };
  /** person_ids: JSON text on SQLite, text[] on PostgreSQL (SqlEngine.idList). */
  pending_erasures: { id: Generated<number>; project_id: string; person_ids: string | string[]; through_seq: number; touched_at: Ms };
  /** Items of a source in a minute by outcome and code ('' for accepted and duplicate); servers add to `count`. */
  outcome_counts: { project_id: string; source_id: string; minute: Ms; outcome: string; code: string; count: number };
  /** Items a tracking plan warned or refused, of a source in an hour, by outcome, code and event (OTHER_EVENTS past the cap); servers add to `count`. */
  outcome_events: { project_id: string; source_id: string; hour: Ms; outcome: string; code: string; event: string; count: number };
  /** A refused or dropped item kept as sent (cut past 16 KiB); `codes` and `errors` JSON text; `bytes` what the row weighs (sampleBytes). */
  item_samples: {
    id: Generated<number>; project_id: string; source_id: string; outcome: string; code: string; codes: string; errors: string;
    item: string; cut: Flag; bytes: number; received_at: Ms; request_id: string; item_index: number;
    distinct_id: string | null; anonymous_id: string | null; previous_id: string | null;
  };
  /**
   * Destinations (port-destinations.ts). config: the kind's fields, a JSON
   * object as text; sources and events: JSON arrays as text, on both engines;
   * lease_until: the store's clock, 0 when nobody holds it.
   */
  destinations: {
    id: string; project_id: string; kind: string; config: string;
    sources: string; events: string; paused: Flag;
    cursor_seq: number; generation: number; delivered: number; last_error: string | null;
    last_delivered_at: Ms | null; lease_holder: string | null; lease_until: Ms; created_at: Ms;
    /** Why delivery paused itself (a 410); null otherwise. */
    paused_reason: string | null;
    /** The next file of a destination that writes files, JSON text (port-destinations.ts, FilePlan); null before its first. */
    file_plan: string | null;
  };
}
