import type { AuthRecord, Project, Source, StoredEvent } from './port.js';

/** A row as the engines return it: column name to value, decoded by the engine's own functions. */
type Row = Record<string, never>;

/**
 * The authentication row both engines select (same aliases: key_id, s_id, …),
 * with the engine's own decoders for source and project columns.
 */
export function authFromRow(r: Row, toSource: (row: never) => Source, toProject: (row: never) => Project): AuthRecord {
  return {
    keyId: r.key_id,
    hash: r.hash,
    expiresAt: r.expires_at,
    revokedAt: r.revoked_at,
    source: toSource({
      id: r.s_id, project_id: r.s_project_id, name: r.s_name, filter_bots: r.filter_bots,
      record_ip: r.record_ip, created_at: r.s_created_at,
    } as never),
    project: toProject(r as never),
  };
}

/** An events row with its current person (current_person), and properties already decoded. */
export function storedEventFromRow(r: Row, properties: Record<string, unknown>): StoredEvent {
  return {
    id: r.id,
    event: r.event,
    distinctId: r.distinct_id,
    anonymousId: r.anonymous_id,
    personId: r.current_person,
    sessionId: r.session_id,
    timestamp: r.timestamp,
    receivedAt: r.received_at,
    insertId: r.insert_id,
    properties,
  };
}
