import type { AuthRecord, StoredEvent } from '../port.js';
import { toProject, toSource } from '../sql/rows.js';

/** A row as better-sqlite3 returns it. */
type Row = Record<string, never>;

/** The authentication row (aliases key_id, s_id, …; the project's columns unaliased). */
export function authFromRow(r: Row): AuthRecord {
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

/** An events row with its current person (current_person); properties are JSON text. */
export function storedEventFromRow(r: Row): StoredEvent {
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
    properties: JSON.parse(r.properties) as Record<string, unknown>,
  };
}
