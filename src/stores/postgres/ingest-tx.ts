import type pg from 'pg';
import { type IngestTx, type KeyState, type NewEventRow, type PersonKind, type PersonRef, StoreUnavailableError, type SuppressedIds, type TraitWrite } from '../port.js';
import { int8Array, jsonbArray, textArray, uuidArray } from './binary-arrays.js';
import { LOCK_NS, isServerError, unavailable } from './pool.js';

// Lists travel as array parameters read with unnest or = ANY, so every method
// is one statement and one round trip whatever its size, and no SQL is ever
// built from values. They are sent in binary (binary-arrays.ts): nothing to
// escape on either side.

export const SQL = {
  lock: 'SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))',
  limit: 'SELECT monthly_event_limit AS l FROM projects WHERE id = $1',
  keyStates: `SELECT k.id, k.revoked_at, k.expires_at,
      (s.deleted_at IS NULL AND p.deleted_at IS NULL AND o.deleted_at IS NULL) AS live
    FROM api_keys k JOIN sources s ON s.id = k.source_id JOIN projects p ON p.id = s.project_id JOIN orgs o ON o.id = p.org_id
    WHERE k.id = ANY($1::text[])`,
  savepoint: 'SAVEPOINT pass',
  release: 'RELEASE SAVEPOINT pass',
  rollbackTo: 'ROLLBACK TO SAVEPOINT pass',
  usage: 'SELECT events FROM usage WHERE project_id = $1 AND month = $2',
  // Lookups by a list probe the primary key once per value (a lateral join
  // over the list; LIMIT 1 keeps the planner from flattening it into a join
  // it may plan as a scan), so their cost follows the request, not the table. With
  // = ANY the planner chose from statistics, and while a table grew faster
  // than ANALYZE ran, it read a whole source's insert_ids, or hashed all of a
  // project's persons, for every batch (36 ms against 2 ms at 7,000 persons).
  findInsertIds: `SELECT x.insert_id, i.event_id FROM unnest($2::text[]) AS x(insert_id)
    CROSS JOIN LATERAL (SELECT event_id FROM insert_ids WHERE source_id = $1 AND insert_id = x.insert_id LIMIT 1) i`,
  findSuppressed: `SELECT false AS person, distinct_id AS id FROM suppressed_ids WHERE project_id = $1 AND distinct_id = ANY($2::text[])
    UNION ALL SELECT true, person_id FROM suppressed_persons WHERE project_id = $1 AND person_id = ANY($3::text[])`,
  findLinks: `SELECT x.key, coalesce(m.id, p.id) AS id, coalesce(m.kind, p.kind) AS kind
    FROM unnest($2::text[]) AS x(key)
    CROSS JOIN LATERAL (SELECT person_id FROM person_links WHERE project_id = $1 AND distinct_id = x.key LIMIT 1) l
    CROSS JOIN LATERAL (SELECT id, kind, merged_into FROM persons WHERE project_id = $1 AND id = l.person_id LIMIT 1) p
    LEFT JOIN LATERAL (SELECT id, kind FROM persons WHERE project_id = $1 AND id = p.merged_into LIMIT 1) m ON true`,
  findPersons: `SELECT x.key, coalesce(m.id, p.id) AS id, coalesce(m.kind, p.kind) AS kind
    FROM unnest($2::text[]) AS x(key)
    CROSS JOIN LATERAL (SELECT id, kind, merged_into FROM persons WHERE project_id = $1 AND id = x.key LIMIT 1) p
    LEFT JOIN LATERAL (SELECT id, kind FROM persons WHERE project_id = $1 AND id = p.merged_into LIMIT 1) m ON true`,
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
  // Every write of a pass in one statement and one round trip: each part
  // writes a table of its own and reads none of the others, so sharing one
  // snapshot changes nothing. An empty array makes its part a no-op.
  writes: `WITH persons_made AS (
      INSERT INTO persons (project_id, id, kind, created_at)
      SELECT $1::text, r.id, r.kind, $4::bigint FROM unnest($2::text[], $3::text[]) AS r(id, kind)
    ), links_added AS (
      -- Plain INSERTs (here and for insert_ids): a conflict raises, as the port asks.
      INSERT INTO person_links (project_id, distinct_id, person_id)
      SELECT $1::text, r.distinct_id, r.person_id FROM unnest($5::text[], $6::text[]) AS r(distinct_id, person_id)
    ), traits_set AS (
      INSERT INTO person_traits (project_id, person_id, key, value, set_at)
      SELECT $1::text, r.person_id, r.key, r.value, r.set_at
      FROM unnest($7::text[], $8::text[], $9::jsonb[], $10::bigint[]) AS r(person_id, key, value, set_at)
      ON CONFLICT (project_id, person_id, key) DO UPDATE SET value = excluded.value, set_at = excluded.set_at
      WHERE excluded.set_at >= person_traits.set_at
    ), events_stored AS (
      INSERT INTO events (id, project_id, source_id, event, distinct_id, anonymous_id, person_id, session_id,
        "timestamp", received_at, insert_id, properties)
      SELECT r.id, r.project_id, r.source_id, r.event, r.distinct_id, r.anonymous_id, r.person_id, r.session_id,
        r.ts, r.received_at, r.insert_id, r.properties
      FROM unnest($11::uuid[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $18::text[],
        $19::bigint[], $20::bigint[], $21::text[], $22::jsonb[])
        AS r(id, project_id, source_id, event, distinct_id, anonymous_id, person_id, session_id, ts, received_at, insert_id, properties)
    ), insert_ids_claimed AS (
      INSERT INTO insert_ids (source_id, insert_id, event_id)
      SELECT $23::text, r.insert_id, r.event_id FROM unnest($24::text[], $25::uuid[]) AS r(insert_id, event_id)
    ), usage_added AS (
      INSERT INTO usage (project_id, month, events)
      SELECT $1::text, r.month, r.events FROM unnest($26::text[], $27::bigint[]) AS r(month, events)
      ON CONFLICT (project_id, month) DO UPDATE SET events = usage.events + excluded.events
    )
    SELECT 1`,
} as const;

/**
 * Statements prepared once per connection: those whose plan is the same
 * whatever the tables hold, so the generic plan PostgreSQL keeps after five
 * runs is the right one. The writes (rows from arrays, conflicts found by
 * unique keys; the planning saved was 1.3 ms a transaction) and the lookups
 * by list (one probe per value). The other statements are planned for each
 * run's values (unnamed): a generic plan of a read, made while a table was
 * small, went on scanning the table whole as it grew.
 */
const PREPARED: ReadonlySet<keyof typeof SQL> = new Set(['writes', 'findInsertIds', 'findLinks', 'findPersons']);

/** Writes waiting for the next round trip; each kind at most once (see hold). */
interface PendingWrites {
  projectId: string | null;
  persons: { list: { id: string; kind: PersonKind }[]; createdAt: number } | null;
  links: { distinctId: string; personId: string }[] | null;
  traits: TraitWrite[] | null;
  events: NewEventRow[] | null;
  insertIds: { sourceId: string; rows: { insertId: string; eventId: string | null }[] } | null;
  usage: Map<string, number> | null;
}

const noWrites = (): PendingWrites => ({ projectId: null, persons: null, links: null, traits: null, events: null, insertIds: null, usage: null });

/**
 * The ingest transaction on PostgreSQL, over one client that holds an open
 * transaction. Reads are one statement each. Writes wait in memory and go
 * together in one statement (SQL.writes) before the next read, a merge, or
 * the end of the transaction (flush), so a pass costs one round trip for all
 * its writes instead of six. Any failure rejects with StoreUnavailableError
 * and the caller rolls the whole transaction back.
 *
 * Contract: whoever opens the transaction calls flush() before COMMIT
 * (postgres-store.ts does, in withIngestTx).
 */
export class PgIngestTx implements IngestTx {
  private pending = noWrites();

  constructor(private readonly client: pg.PoolClient) {}

  async lockProject(projectId: string): Promise<void> {
    // Writers of one project take turns on every server; a hash collision
    // only makes two projects take turns too.
    await this.read('lock', [LOCK_NS.project, projectId]);
  }

  async keyStates(keyIds: string[]): Promise<Map<string, KeyState>> {
    const rows = await this.read<{ id: string; revoked_at: number | null; expires_at: number | null; live: boolean }>('keyStates', [textArray(keyIds)]);
    return new Map(rows.map((r) => [r.id, { revokedAt: r.revoked_at, expiresAt: r.expires_at, ownersLive: r.live }]));
  }

  async savepoint<T>(fn: () => Promise<T>): Promise<T> {
    await this.read('savepoint', []);
    try {
      const out = await fn();
      // Held-back writes of `fn` belong inside the savepoint.
      await this.read('release', []);
      return out;
    } catch (e) {
      // After a lost connection the transaction fails as a whole anyway.
      if (e instanceof StoreUnavailableError && !isServerError(e)) throw e;
      this.pending = noWrites();
      await this.q('rollbackTo', []);
      throw e;
    }
  }

  async monthlyEventLimit(projectId: string): Promise<number | null> {
    const rows = await this.read<{ l: number | null }>('limit', [projectId]);
    return rows[0]?.l ?? null;
  }

  async usage(projectId: string, month: string): Promise<number> {
    const rows = await this.read<{ events: number }>('usage', [projectId, month]);
    return rows[0]?.events ?? 0;
  }

  async addUsage(projectId: string, month: string, events: number): Promise<void> {
    await this.hold(projectId, () => false, (w) => {
      w.usage ??= new Map();
      w.usage.set(month, (w.usage.get(month) ?? 0) + events);
    });
  }

  async findInsertIds(sourceId: string, insertIds: string[]): Promise<Map<string, string | null>> {
    const rows = await this.read<{ insert_id: string; event_id: string | null }>('findInsertIds', [sourceId, textArray(insertIds)]);
    return new Map(rows.map((r) => [r.insert_id, r.event_id]));
  }

  async addInsertIds(sourceId: string, rows: { insertId: string; eventId: string | null }[]): Promise<void> {
    await this.hold(
      null,
      (w) => w.insertIds !== null && w.insertIds.sourceId !== sourceId,
      (w) => (w.insertIds = { sourceId, rows: w.insertIds === null ? rows : w.insertIds.rows.concat(rows) }),
    );
  }

  async findSuppressed(projectId: string, distinctIds: string[], personIds: string[]): Promise<SuppressedIds> {
    const found: SuppressedIds = { distinctIds: new Set(), personIds: new Set() };
    const rows = await this.read<{ person: boolean; id: string }>('findSuppressed', [projectId, textArray(distinctIds), textArray(personIds)]);
    for (const r of rows) (r.person ? found.personIds : found.distinctIds).add(r.id);
    return found;
  }

  async findLinks(projectId: string, distinctIds: string[]): Promise<Map<string, PersonRef>> {
    return refs(await this.read<RefRow>('findLinks', [projectId, textArray(distinctIds)]));
  }

  async findPersons(projectId: string, personIds: string[]): Promise<Map<string, PersonRef>> {
    return refs(await this.read<RefRow>('findPersons', [projectId, textArray(personIds)]));
  }

  async createPersons(projectId: string, persons: { id: string; kind: PersonKind }[], createdAt: number): Promise<void> {
    await this.hold(projectId, (w) => w.persons !== null, (w) => (w.persons = { list: persons, createdAt }));
  }

  async addLinks(projectId: string, links: { distinctId: string; personId: string }[]): Promise<void> {
    await this.hold(projectId, (w) => w.links !== null, (w) => (w.links = links));
  }

  async mergePerson(projectId: string, from: string, into: string): Promise<void> {
    if (from === into) return;
    await this.read('mergePerson', [projectId, from, into]);
  }

  async upsertTraits(projectId: string, traits: TraitWrite[]): Promise<void> {
    await this.hold(projectId, (w) => w.traits !== null, (w) => (w.traits = traits));
  }

  async insertEvents(rows: NewEventRow[]): Promise<void> {
    await this.hold(null, () => false, (w) => (w.events = w.events === null ? rows : w.events.concat(rows)));
  }

  /** Sends the writes waiting, if any, in one statement. */
  async flush(): Promise<void> {
    const w = this.pending;
    if (w.persons === null && w.links === null && w.traits === null && w.events === null && w.insertIds === null && w.usage === null) return;
    this.pending = noWrites();
    const persons = w.persons?.list ?? [];
    const links = w.links ?? [];
    const traits = w.traits ?? [];
    const events = w.events ?? [];
    const claims = w.insertIds?.rows ?? [];
    const usage = [...(w.usage ?? [])];
    const text = <K extends keyof NewEventRow>(k: K): Buffer => textArray(events.map((r) => r[k] as string | null));
    const int8 = <K extends keyof NewEventRow>(k: K): Buffer => int8Array(events.map((r) => r[k] as number));
    await this.q('writes', [
      w.projectId, textArray(persons.map((p) => p.id)), textArray(persons.map((p) => p.kind)), w.persons?.createdAt ?? 0,
      textArray(links.map((l) => l.distinctId)), textArray(links.map((l) => l.personId)),
      textArray(traits.map((t) => t.personId)), textArray(traits.map((t) => t.key)), jsonbArray(traits.map((t) => t.value)),
      int8Array(traits.map((t) => t.setAt)),
      uuidArray(events.map((r) => r.id)), text('projectId'), text('sourceId'), text('event'), text('distinctId'), text('anonymousId'),
      text('personId'), text('sessionId'), int8('timestamp'), int8('receivedAt'), text('insertId'), jsonbArray(events.map((r) => r.properties)),
      w.insertIds?.sourceId ?? null, textArray(claims.map((c) => c.insertId)), uuidArray(claims.map((c) => c.eventId)),
      textArray(usage.map(([month]) => month)), int8Array(usage.map(([, n]) => n)),
    ]);
  }

  /**
   * Holds a write back: sends what waits first while it clashes (another
   * project's writes, or a kind that may appear once per statement, as ON
   * CONFLICT must not meet one key twice), then records it. The last check
   * and the record run in one synchronous step, so calls made concurrently
   * cannot overwrite each other.
   */
  private async hold(projectId: string | null, clashes: (w: PendingWrites) => boolean, record: (w: PendingWrites) => void): Promise<void> {
    const otherProject = (w: PendingWrites): boolean => projectId !== null && w.projectId !== null && w.projectId !== projectId;
    while (otherProject(this.pending) || clashes(this.pending)) await this.flush();
    if (projectId !== null) this.pending.projectId = projectId;
    record(this.pending);
  }

  /** A statement that reads (or a merge): the writes waiting go first, so it sees them. */
  private async read<R extends pg.QueryResultRow = pg.QueryResultRow>(name: keyof typeof SQL, values: unknown[]): Promise<R[]> {
    await this.flush();
    return this.q<R>(name, values);
  }

  private async q<R extends pg.QueryResultRow = pg.QueryResultRow>(name: keyof typeof SQL, values: unknown[]): Promise<R[]> {
    try {
      const config = PREPARED.has(name) ? { name: `inlet_ingest_${name}`, text: SQL[name], values } : { text: SQL[name], values };
      return (await this.client.query<R>(config)).rows;
    } catch (e) {
      throw unavailable(e);
    }
  }
}

interface RefRow { key: string; id: string; kind: PersonKind }

function refs(rows: RefRow[]): Map<string, PersonRef> {
  return new Map(rows.map((r) => [r.key, { id: r.id, kind: r.kind }]));
}
