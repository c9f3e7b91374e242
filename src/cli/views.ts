import type { GroupSummary, GroupView, Org, PersonView, Project, Source, StoredEvent } from '../stores/port.js';

/** The JSON shapes of docs/cli.md, one function each. */
export const orgJson = (o: Org) => ({ id: o.id, name: o.name });

export const projectJson = (p: Project) => ({
  id: p.id,
  org_id: p.orgId,
  name: p.name,
  api_enabled: p.apiEnabled,
  monthly_event_limit: p.monthlyEventLimit,
});

/** A project with its retention: what `project list` and `project update` print. */
export const projectListingJson = (p: Project) => ({ ...projectJson(p), retention_days: p.retentionDays });

export const sourceJson = (s: Source) => ({
  id: s.id,
  project_id: s.projectId,
  name: s.name,
  filter_bots: s.filterBots,
  record_ip: s.recordIp,
});

export const eventJson = (e: StoredEvent) => ({
  id: e.id,
  event: e.event,
  distinct_id: e.distinctId,
  anonymous_id: e.anonymousId,
  person_id: e.personId,
  session_id: e.sessionId,
  server_session: e.sessionId === null,
  timestamp: new Date(e.timestamp).toISOString(),
  received_at: new Date(e.receivedAt).toISOString(),
  insert_id: e.insertId,
  properties: e.properties,
});

export const personJson = (p: PersonView) => ({
  id: p.id,
  distinct_ids: p.distinctIds,
  traits: p.traits,
  created_at: new Date(p.createdAt).toISOString(),
  groups: p.groups.map((g) => ({ group_type: g.groupType, group_key: g.groupKey })),
});

export const groupSummaryJson = (g: GroupSummary) => ({
  group_type: g.groupType,
  group_key: g.groupKey,
  traits: g.traits,
  created_at: new Date(g.createdAt).toISOString(),
});

export const groupJson = (g: GroupView) => ({ ...groupSummaryJson(g), members: g.members });

export const deleted = (id: string) => ({ id, deleted: true as const });
