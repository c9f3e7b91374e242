import type pg from 'pg';
import type { IngestTx, NewEventRow, PersonKind, PersonRef, TraitWrite } from '../port.js';
import { LOCK_NS, unavailable } from './pool.js';

// Lists travel as array parameters read with unnest or = ANY, so every method
// is one statement and one round trip whatever its size, and no SQL is ever
// built from values.

const SQL = {
  lock: 'SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))',
  limit: 'SELECT monthly_event_limit AS l FROM projects WHERE id = $1',
  usage: 'SELECT events FROM usage WHERE project_id = $1 AND month = $2',
  addUsage: `INSERT INTO usage (project_id, month, events) VALUES ($1, $2, $3)
    ON CONFLICT (project_id, month) DO UPDATE SET events = usage.events + excluded.events`,
  findInsertIds: 'SELECT insert_id, event_id FROM insert_ids WHERE source_id = $1 AND insert_id = ANY($2::text[])',
  // A plain INSERT: a conflict raises, as the port asks.
  addInsertIds: `INSERT INTO insert_ids (source_id, insert_id, event_id)
    SELECT $1::text, r.insert_id, r.event_id FROM unnest($2::text[], $3::uuid[]) AS r(insert_id, event_id)`,
  findLinks: `SELECT l.distinct_id AS key, coalesce(m.id, p.id) AS id, coalesce(m.kind, p.kind) AS kind
    FROM person_links l
    JOIN persons p ON p.project_id = l.project_id AND p.id = l.person_id
    LEFT JOIN persons m ON m.project_id = p.project_id AND m.id = p.merged_into
    WHERE l.project_id = $1 AND l.distinct_id = ANY($2::text[])`,
  findPersons: `SELECT p.id AS key, coalesce(m.id, p.id) AS id, coalesce(m.kind, p.kind) AS kind
    FROM persons p LEFT JOIN persons m ON m.project_id = p.project_id AND m.id = p.merged_into
    WHERE p.project_id = $1 AND p.id = ANY($2::text[])`,
  createPersons: `INSERT INTO persons (project_id, id, kind, created_at)
    SELECT $1::text, r.id, r.kind, $4::bigint FROM unnest($2::text[], $3::text[]) AS r(id, kind)`,
  setLinks: `INSERT INTO person_links (project_id, distinct_id, person_id)
    SELECT $1::text, r.distinct_id, r.person_id FROM unnest($2::text[], $3::text[]) AS r(distinct_id, person_id)
    ON CONFLICT (project_id, distinct_id) DO UPDATE SET person_id = excluded.person_id`,
  // One statement: the sub-statements share a snapshot, and each touches
  // different rows (the traits moved are those of $2, the conflicts those of $3).
  // On a tie the person merged into keeps its value, as on every engine.
  mergePerson: `WITH mark AS (
      UPDATE persons SET merged_into = $3::text WHERE project_id = $1::text AND (id = $2::text OR merged_into = $2::text)
    ), relink AS (
      UPDATE person_links SET person_id = $3 WHERE project_id = $1 AND person_id = $2
    ), moved AS (
      DELETE FROM person_traits WHERE project_id = $1 AND person_id = $2 RETURNING key, value, set_at
    )
    INSERT INTO person_traits (project_id, person_id, key, value, set_at)
    SELECT $1, $3, key, value, set_at FROM moved
    ON CONFLICT (project_id, person_id, key) DO UPDATE SET value = excluded.value, set_at = excluded.set_at
    WHERE excluded.set_at > person_traits.set_at`,
  upsertTraits: `INSERT INTO person_traits (project_id, person_id, key, value, set_at)
    SELECT $1::text, r.person_id, r.key, r.value::jsonb, r.set_at
    FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[]) AS r(person_id, key, value, set_at)
    ON CONFLICT (project_id, person_id, key) DO UPDATE SET value = excluded.value, set_at = excluded.set_at
    WHERE excluded.set_at >= person_traits.set_at`,
  insertEvents: `INSERT INTO events (id, project_id, source_id, event, distinct_id, anonymous_id, person_id, session_id,
      "timestamp", received_at, insert_id, properties)
    SELECT r.id, r.project_id, r.source_id, r.event, r.distinct_id, r.anonymous_id, r.person_id, r.session_id,
      r.ts, r.received_at, r.insert_id, r.properties::jsonb
    FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
      $9::bigint[], $10::bigint[], $11::text[], $12::text[])
      AS r(id, project_id, source_id, event, distinct_id, anonymous_id, person_id, session_id, ts, received_at, insert_id, properties)`,
} as const;

/**
 * The ingest transaction on PostgreSQL, over one client that holds an open
 * transaction. Every method is one statement; any failure rejects with
 * StoreUnavailableError and the caller rolls the whole transaction back.
 */
export class PgIngestTx implements IngestTx {
  constructor(private readonly client: pg.PoolClient) {}

  async lockProject(projectId: string): Promise<void> {
    // Writers of one project take turns on every server; a hash collision
    // only makes two projects take turns too.
    await this.q('lock', [LOCK_NS.project, projectId]);
  }

  async monthlyEventLimit(projectId: string): Promise<number | null> {
    const rows = await this.q<{ l: number | null }>('limit', [projectId]);
    return rows[0]?.l ?? null;
  }

  async usage(projectId: string, month: string): Promise<number> {
    const rows = await this.q<{ events: number }>('usage', [projectId, month]);
    return rows[0]?.events ?? 0;
  }

  async addUsage(projectId: string, month: string, events: number): Promise<void> {
    await this.q('addUsage', [projectId, month, events]);
  }

  async findInsertIds(sourceId: string, insertIds: string[]): Promise<Map<string, string | null>> {
    const rows = await this.q<{ insert_id: string; event_id: string | null }>('findInsertIds', [sourceId, insertIds]);
    return new Map(rows.map((r) => [r.insert_id, r.event_id]));
  }

  async addInsertIds(sourceId: string, rows: { insertId: string; eventId: string | null }[]): Promise<void> {
    await this.q('addInsertIds', [sourceId, rows.map((r) => r.insertId), rows.map((r) => r.eventId)]);
  }

  async findLinks(projectId: string, distinctIds: string[]): Promise<Map<string, PersonRef>> {
    return refs(await this.q<RefRow>('findLinks', [projectId, distinctIds]));
  }

  async findPersons(projectId: string, personIds: string[]): Promise<Map<string, PersonRef>> {
    return refs(await this.q<RefRow>('findPersons', [projectId, personIds]));
  }

  async createPersons(projectId: string, persons: { id: string; kind: PersonKind }[], createdAt: number): Promise<void> {
    await this.q('createPersons', [projectId, persons.map((p) => p.id), persons.map((p) => p.kind), createdAt]);
  }

  async setLinks(projectId: string, links: { distinctId: string; personId: string }[]): Promise<void> {
    await this.q('setLinks', [projectId, links.map((l) => l.distinctId), links.map((l) => l.personId)]);
  }

  async mergePerson(projectId: string, from: string, into: string): Promise<void> {
    if (from === into) return;
    await this.q('mergePerson', [projectId, from, into]);
  }

  async upsertTraits(projectId: string, traits: TraitWrite[]): Promise<void> {
    await this.q('upsertTraits', [
      projectId,
      traits.map((t) => t.personId),
      traits.map((t) => t.key),
      traits.map((t) => t.value),
      traits.map((t) => t.setAt),
    ]);
  }

  async insertEvents(rows: NewEventRow[]): Promise<void> {
    const col = <K extends keyof NewEventRow>(k: K): NewEventRow[K][] => rows.map((r) => r[k]);
    await this.q('insertEvents', [
      col('id'), col('projectId'), col('sourceId'), col('event'), col('distinctId'), col('anonymousId'),
      col('personId'), col('sessionId'), col('timestamp'), col('receivedAt'), col('insertId'), col('properties'),
    ]);
  }

  private async q<R extends pg.QueryResultRow = pg.QueryResultRow>(name: keyof typeof SQL, values: unknown[]): Promise<R[]> {
    try {
      // Named, so each connection parses and plans each statement once.
      return (await this.client.query<R>({ name: `inlet_ingest_${name}`, text: SQL[name], values })).rows;
    } catch (e) {
      throw unavailable(e);
    }
  }
}

interface RefRow { key: string; id: string; kind: PersonKind }

function refs(rows: RefRow[]): Map<string, PersonRef> {
  return new Map(rows.map((r) => [r.key, { id: r.id, kind: r.kind }]));
}
