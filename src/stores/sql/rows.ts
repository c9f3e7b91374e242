import type { Selectable } from 'kysely';
import type { EventRow, KeyRecord, Org, Project, Source, StoredEvent } from '../port.js';
import type { SessionRecord, UserRecord } from '../port-console.js';
import type { Database } from './schema.js';

/** The keys whose source, project and organization are live, as `k`, `s`, `p`: what each engine's key lookup reads from. */
export const LIVE_KEYS = `api_keys k
  JOIN sources s ON s.id = k.source_id AND s.deleted_at IS NULL
  JOIN projects p ON p.id = s.project_id AND p.deleted_at IS NULL
  JOIN orgs o ON o.id = p.org_id AND o.deleted_at IS NULL`;

/** A yes/no column as read on either engine (1 on SQLite, true on PostgreSQL). */
export const isSet = (v: boolean | number): boolean => v === true || v === 1;

/** An organization as the port shows it, from its row. */
export const toOrg = (r: Selectable<Database['orgs']>): Org => ({ id: r.id, name: r.name, createdAt: r.created_at });

/** A project as the port shows it, from its row. */
export const toProject = (r: Selectable<Database['projects']>): Project => ({
  id: r.id, orgId: r.org_id, name: r.name, apiEnabled: isSet(r.api_enabled),
  monthlyEventLimit: r.monthly_event_limit, retentionDays: r.retention_days, createdAt: r.created_at,
});

/** A source as the port shows it, from its row. */
export const toSource = (r: Pick<Selectable<Database['sources']>, 'id' | 'project_id' | 'name' | 'filter_bots' | 'record_ip' | 'created_at'>): Source => ({
  id: r.id, projectId: r.project_id, name: r.name, filterBots: isSet(r.filter_bots),
  recordIp: isSet(r.record_ip), createdAt: r.created_at,
});

/** A key as the port shows it, from its row. */
export const toKey = (r: Selectable<Database['api_keys']>): KeyRecord => ({
  id: r.id, sourceId: r.source_id, hash: r.hash, lastFour: r.last_four, createdAt: r.created_at,
  lastUsedAt: r.last_used_at, expiresAt: r.expires_at, revokedAt: r.revoked_at,
});

/** A console account as the port shows it, from its row. */
export const toUser = (r: Selectable<Database['users']>): UserRecord => ({
  id: r.id, email: r.email, passwordHash: r.password_hash, admin: isSet(r.admin), disabled: isSet(r.disabled), createdAt: r.created_at,
});

/** A session as the port shows it, from its row. */
export const toSession = (r: Selectable<Database['sessions']>): SessionRecord => ({
  tokenHash: r.token_hash, userId: r.user_id, csrfToken: r.csrf_token, createdAt: r.created_at, lastSeenAt: r.last_seen_at,
});

/** An event as the port shows it, from its row (EventRow: its current person, its properties as JSON text). */
export const toStoredEvent = (r: EventRow): StoredEvent => ({
  id: r.id, event: r.event, distinctId: r.distinct_id, anonymousId: r.anonymous_id, personId: r.person_id,
  sessionId: r.session_id, timestamp: r.timestamp, receivedAt: r.received_at, insertId: r.insert_id,
  properties: JSON.parse(r.properties) as Record<string, unknown>,
});
