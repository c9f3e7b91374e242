import type pg from 'pg';
import {
  type GroupRef,
  type IngestTx, type KeyState, type NewEventRow, type PassQuery, type PassScope, type PassState, type PassWrites, type PersonKind, type PersonRef,
  StoreUnavailableError, type SuppressedIds, noPassWrites,
} from '../port.js';
import { int8Array, jsonbArray, textArray, uuidArray } from './binary-arrays.js';
import { LOCK_NS, isServerError, unavailable } from './pool.js';
import {
  GROUP_TRAIT_COLUMNS, GROUP_TRAIT_SET, MEMBER_COLUMNS, ONCE, PERSON_TRAIT_COLUMNS, TRAIT_MERGED, TRAIT_SET, TRAIT_SET_ONCE,
} from '../sql/trait-rules.js';

// Lists travel as array parameters read with unnest or = ANY, so every method
// is one statement and one round trip whatever its size, and no SQL is ever
// built from values. They are sent in binary (binary-arrays.ts): nothing to
// escape on either side.

export const SQL = {
  lock: 'SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))',
  // The limit and the usage of the months asked, in one statement: a row per
  // month found (with the limit), or one with a null month.
  meter: `SELECT p.monthly_event_limit AS l, u.month, u.events FROM projects p
    LEFT JOIN usage u ON u.project_id = p.id AND u.month = ANY($2::text[])
    WHERE p.id = $1`,
  keyStates: `SELECT k.id, k.revoked_at, k.expires_at,
      (s.deleted_at IS NULL AND p.deleted_at IS NULL AND o.deleted_at IS NULL) AS live
    FROM api_keys k JOIN sources s ON s.id = k.source_id JOIN projects p ON p.id = s.project_id JOIN orgs o ON o.id = p.org_id
    WHERE k.id = ANY($1::text[])`,
  savepoint: 'SAVEPOINT pass',
  release: 'RELEASE SAVEPOINT pass',
  rollbackTo: 'ROLLBACK TO SAVEPOINT pass',
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
  mergePerson: `WITH mark AS (
      UPDATE persons SET merged_into = $3::text WHERE project_id = $1::text AND (id = $2::text OR merged_into = $2::text)
    ), relink AS (
      UPDATE person_links SET person_id = $3 WHERE project_id = $1 AND person_id = $2
    ), members_moved AS (
      DELETE FROM group_members WHERE project_id = $1 AND person_id = $2 RETURNING group_type, group_key, created_at
    ), members_joined AS (
      INSERT INTO ${MEMBER_COLUMNS} SELECT $1, group_type, group_key, $3, created_at FROM members_moved ${ONCE}
    ), moved AS (
      DELETE FROM person_traits WHERE project_id = $1 AND person_id = $2 RETURNING key, value, set_at, unset
    )
    INSERT INTO ${PERSON_TRAIT_COLUMNS} SELECT $1, $3, key, value, set_at, unset FROM moved ${TRAIT_MERGED}`,
  // Ids among those asked whose person holds another distinct_id too.
  withOtherIds: `SELECT x.key FROM unnest($2::text[]) AS x(key)
    CROSS JOIN LATERAL (SELECT person_id FROM person_links WHERE project_id = $1 AND distinct_id = x.key LIMIT 1) l
    WHERE EXISTS (SELECT 1 FROM person_links o WHERE o.project_id = $1 AND o.person_id = l.person_id AND o.distinct_id <> x.key)`,
  groupTypes: 'SELECT group_type FROM group_types WHERE project_id = $1',
  findGroups: `SELECT g.group_type AS "groupType", g.group_key AS "groupKey" FROM unnest($2::text[], $3::text[]) AS x(t, k)
    CROSS JOIN LATERAL (SELECT group_type, group_key FROM project_groups WHERE project_id = $1 AND group_type = x.t AND group_key = x.k LIMIT 1) g`,
  // What only people and groups write (set-once traits, group types, groups, their traits, memberships):
  // rare, so a statement of its own, sent only when there is some, after the writes it may rely on.
  peopleAndGroups: `WITH set_once AS (
      INSERT INTO ${PERSON_TRAIT_COLUMNS}
      SELECT $1::text, r.person_id, r.key, r.value, r.set_at, false
      FROM unnest($2::text[], $3::text[], $4::jsonb[], $5::bigint[]) AS r(person_id, key, value, set_at)
      ${TRAIT_SET_ONCE}
    ), types_added AS (
      INSERT INTO group_types (project_id, group_type, created_at) SELECT $1::text, t, $6::bigint FROM unnest($7::text[]) AS r(t)
    ), groups_made AS (
      INSERT INTO project_groups (project_id, group_type, group_key, created_at)
      SELECT $1::text, r.t, r.k, $6::bigint FROM unnest($8::text[], $9::text[]) AS r(t, k)
      ${ONCE}
    ), group_traits_set AS (
      INSERT INTO ${GROUP_TRAIT_COLUMNS}
      SELECT $1::text, r.t, r.k, r.key, r.value, r.set_at
      FROM unnest($10::text[], $11::text[], $12::text[], $13::jsonb[], $14::bigint[]) AS r(t, k, key, value, set_at)
      ${GROUP_TRAIT_SET}
    ), members_added AS (
      INSERT INTO ${MEMBER_COLUMNS}
      SELECT $1::text, r.t, r.k, r.person_id, $6::bigint FROM unnest($15::text[], $16::text[], $17::text[]) AS r(t, k, person_id)
      ${ONCE}
    )
    SELECT 1`,
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
      INSERT INTO ${PERSON_TRAIT_COLUMNS}
      SELECT $1::text, r.person_id, r.key, r.value, r.set_at, r.unset <> 0
      FROM unnest($7::text[], $8::text[], $9::jsonb[], $10::bigint[], $11::bigint[]) AS r(person_id, key, value, set_at, unset)
      ${TRAIT_SET}
    ), events_stored AS (
      INSERT INTO events (id, project_id, source_id, event, distinct_id, anonymous_id, person_id, session_id,
        "timestamp", received_at, insert_id, properties)
      SELECT r.id, r.project_id, r.source_id, r.event, r.distinct_id, r.anonymous_id, r.person_id, r.session_id,
        r.ts, r.received_at, r.insert_id, r.properties
      FROM unnest($12::uuid[], $13::text[], $14::text[], $15::text[], $16::text[], $17::text[], $18::text[], $19::text[],
        $20::bigint[], $21::bigint[], $22::text[], $23::jsonb[])
        AS r(id, project_id, source_id, event, distinct_id, anonymous_id, person_id, session_id, ts, received_at, insert_id, properties)
    ), insert_ids_claimed AS (
      INSERT INTO insert_ids (source_id, insert_id, event_id)
      SELECT $24::text, r.insert_id, r.event_id FROM unnest($25::text[], $26::uuid[]) AS r(insert_id, event_id)
    ), usage_added AS (
      INSERT INTO usage (project_id, month, events)
      SELECT $1::text, r.month, r.events FROM unnest($27::text[], $28::bigint[]) AS r(month, events)
      ON CONFLICT (project_id, month) DO UPDATE SET events = usage.events + excluded.events
    ), outcomes_counted AS (
      -- One row per minute, outcome and code (the pass adds them up), so no row is hit twice.
      INSERT INTO outcome_counts (source_id, minute, outcome, code, project_id, count)
      SELECT $24::text, r.minute, r.outcome, r.code, $1::text, r.count
      FROM unnest($29::bigint[], $30::text[], $31::text[], $32::bigint[]) AS r(minute, outcome, code, count)
      ON CONFLICT (source_id, minute, outcome, code) DO UPDATE SET count = outcome_counts.count + excluded.count
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

/** The parts of SQL.writes: every field of a bundle but the merges, which go between two of them. */
type WritePart = Exclude<keyof PassWrites, 'merges'>;

/**
 * The parameters of SQL.writes that each field of a bundle fills, after
 * $1 (the project) and $4 (when persons were created). A field added to
 * PassWrites fails to compile here until it is written (see IngestTx); merges
 * are written by name, in flush.
 */
const PARAMS: { [K in WritePart]-?: (v: PassWrites[K], scope: PassScope) => unknown[] } = {
  persons: (v) => [textArray(v.map((p) => p.id)), textArray(v.map((p) => p.kind))],
  links: (v) => [textArray(v.map((l) => l.distinctId)), textArray(v.map((l) => l.personId))],
  traits: (v) => [
    textArray(v.map((t) => t.personId)), textArray(v.map((t) => t.key)), jsonbArray(v.map((t) => t.value ?? 'null')), int8Array(v.map((t) => t.setAt)),
    int8Array(v.map((t) => (t.value === null ? 1 : 0))),
  ],
  events: (events) => {
    const text = <K extends keyof NewEventRow>(k: K): Buffer => textArray(events.map((r) => r[k] as string | null));
    const int8 = <K extends keyof NewEventRow>(k: K): Buffer => int8Array(events.map((r) => r[k] as number));
    return [
      uuidArray(events.map((r) => r.id)), text('projectId'), text('sourceId'), text('event'), text('distinctId'), text('anonymousId'),
      text('personId'), text('sessionId'), int8('timestamp'), int8('receivedAt'), text('insertId'), jsonbArray(events.map((r) => r.properties)),
    ];
  },
  insertIds: (v, scope) => [scope.sourceId, textArray(v.map((c) => c.insertId)), uuidArray(v.map((c) => c.eventId))],
  usage: (v) => [textArray([...v.keys()]), int8Array([...v.values()])],
  setOnce: (v) => [textArray(v.map((t) => t.personId)), textArray(v.map((t) => t.key)), jsonbArray(v.map((t) => t.value ?? 'null')), int8Array(v.map((t) => t.setAt))],
  groupTypes: (v) => [textArray(v)],
  groups: (v) => [textArray(v.map((g) => g.groupType)), textArray(v.map((g) => g.groupKey))],
  groupTraits: (v) => [
    textArray(v.map((t) => t.groupType)), textArray(v.map((t) => t.groupKey)), textArray(v.map((t) => t.key)), jsonbArray(v.map((t) => t.value)), int8Array(v.map((t) => t.setAt)),
  ],
  members: (v) => [textArray(v.map((m) => m.groupType)), textArray(v.map((m) => m.groupKey)), textArray(v.map((m) => m.personId))],
  outcomes: (v) => [int8Array(v.map((o) => o.minute)), textArray(v.map((o) => o.outcome)), textArray(v.map((o) => o.code)), int8Array(v.map((o) => o.count))],
};

/** The parts in the order of SQL.writes' parameters. */
const PARTS_IN_PARAMS: readonly WritePart[] = ['persons', 'links', 'traits', 'events', 'insertIds', 'usage', 'outcomes'];
/** The parts in the order of SQL.peopleAndGroups' parameters. */
const PEOPLE_AND_GROUPS: readonly WritePart[] = ['setOnce', 'groupTypes', 'groups', 'groupTraits', 'members'];

/** Nothing of these fields to write: each is a list, or the usage map. */
function nothingIn(w: PassWrites, parts: readonly WritePart[]): boolean {
  return parts.every((k) => (w[k] instanceof Map ? w[k].size : w[k].length) === 0);
}

const EMPTY: PassWrites = noPassWrites();

/**
 * The ingest transaction on PostgreSQL, over one client that holds an open
 * transaction. A read is one statement per list asked for, after the lock. A
 * bundle of writes waits in memory and goes in one statement (SQL.writes)
 * before the next read or savepoint, or the end of the transaction (flush),
 * so a pass costs one round trip for all its writes; a bundle with merges
 * takes two, with the merges between them (PASS_WRITE_ORDER). Any failure
 * rejects with StoreUnavailableError and the caller rolls the whole
 * transaction back.
 *
 * Contract: whoever opens the transaction calls flush() before COMMIT
 * (postgres-store.ts does, in withIngestTx).
 */
export class PgIngestTx implements IngestTx {
  private pending: { scope: PassScope; writes: PassWrites } | null = null;

  constructor(private readonly client: pg.PoolClient) {}

  async read(q: PassQuery): Promise<PassState> {
    // Writers of one project take turns on every server; a hash collision
    // only makes two projects take turns too.
    await this.statement('lock', [LOCK_NS.project, q.projectId]);
    const keys = new Map<string, KeyState>();
    if (q.keyIds.length > 0) {
      const rows = await this.q<{ id: string; revoked_at: number | null; expires_at: number | null; live: boolean }>('keyStates', [textArray(q.keyIds)]);
      for (const r of rows) keys.set(r.id, { revokedAt: r.revoked_at, expiresAt: r.expires_at, ownersLive: r.live });
    }
    let limit: number | null = null;
    const usage = new Map<string, number>();
    if (q.months.length > 0) {
      for (const r of await this.q<{ l: number | null; month: string | null; events: number | null }>('meter', [q.projectId, textArray(q.months)])) {
        limit = r.l;
        if (r.month !== null) usage.set(r.month, r.events!);
      }
    }
    const suppressed: SuppressedIds = { distinctIds: new Set(), personIds: new Set() };
    if (q.suppressed.distinctIds.length > 0 || q.suppressed.personIds.length > 0) {
      const rows = await this.q<{ person: boolean; id: string }>('findSuppressed', [q.projectId, textArray(q.suppressed.distinctIds), textArray(q.suppressed.personIds)]);
      for (const r of rows) (r.person ? suppressed.personIds : suppressed.distinctIds).add(r.id);
    }
    const insertIds = new Map<string, string | null>();
    if (q.insertIds.length > 0) {
      for (const r of await this.q<{ insert_id: string; event_id: string | null }>('findInsertIds', [q.sourceId, textArray(q.insertIds)])) insertIds.set(r.insert_id, r.event_id);
    }
    const links = q.linkedIds.length === 0 ? new Map<string, PersonRef>() : refs(await this.q<RefRow>('findLinks', [q.projectId, textArray(q.linkedIds)]));
    const persons = q.personIds.length === 0 ? new Map<string, PersonRef>() : refs(await this.q<RefRow>('findPersons', [q.projectId, textArray(q.personIds)]));
    const withOtherIds = new Set<string>();
    if (q.withOtherIds !== undefined && q.withOtherIds.length > 0) {
      for (const r of await this.q<{ key: string }>('withOtherIds', [q.projectId, textArray(q.withOtherIds)])) withOtherIds.add(r.key);
    }
    const groupTypes = q.groupTypes === true ? (await this.q<{ group_type: string }>('groupTypes', [q.projectId])).map((r) => r.group_type) : [];
    const groups =
      q.groups === undefined || q.groups.length === 0
        ? []
        : await this.q<GroupRef>('findGroups', [q.projectId, textArray(q.groups.map((g) => g.groupType)), textArray(q.groups.map((g) => g.groupKey))]);
    return { keys, monthlyEventLimit: limit, usage, insertIds, links, persons, suppressed, withOtherIds, groupTypes, groups };
  }

  async write(scope: PassScope, writes: PassWrites): Promise<void> {
    // Bundles are not joined: ON CONFLICT must not meet one key twice in a
    // statement. The last check and the record run in one synchronous step,
    // so bundles written at the same time cannot overwrite each other.
    while (this.pending !== null) await this.flush();
    this.pending = { scope, writes };
  }

  async savepoint<T>(fn: () => Promise<T>): Promise<T> {
    await this.statement('savepoint', []);
    try {
      const out = await fn();
      // Held-back writes of `fn` belong inside the savepoint.
      await this.statement('release', []);
      return out;
    } catch (e) {
      // After a lost connection the transaction fails as a whole anyway.
      if (e instanceof StoreUnavailableError && !isServerError(e)) throw e;
      this.pending = null;
      await this.q('rollbackTo', []);
      throw e;
    }
  }

  /** Sends the bundle waiting, if any: one statement, or two with the merges between them. */
  async flush(): Promise<void> {
    const p = this.pending;
    if (p === null) return;
    this.pending = null;
    const { scope, writes: w } = p;
    if (w.merges.length === 0) {
      await this.writes(scope, w);
    } else {
      await this.writes(scope, { ...EMPTY, persons: w.persons, links: w.links });
      for (const m of w.merges) if (m.from !== m.into) await this.q('mergePerson', [scope.projectId, m.from, m.into]);
      await this.writes(scope, { ...w, persons: [], links: [], merges: [] });
    }
    // Only what comes before them in PASS_WRITE_ORDER is relied on, and it is written by now.
    if (!nothingIn(w, PEOPLE_AND_GROUPS)) {
      const [setOnce, groupTypes, groups, groupTraits, members] = PEOPLE_AND_GROUPS.map((k) => (PARAMS[k] as (v: unknown, s: PassScope) => unknown[])(w[k], scope));
      await this.q('peopleAndGroups', [scope.projectId, ...setOnce!, scope.now, ...groupTypes!, ...groups!, ...groupTraits!, ...members!]);
    }
  }

  /** SQL.writes with the fields of `w` but the merges; nothing is sent when they are all empty. */
  private async writes(scope: PassScope, w: PassWrites): Promise<void> {
    if (nothingIn(w, PARTS_IN_PARAMS)) return;
    const [persons, links, traits, events, insertIds, usage, outcomes] = PARTS_IN_PARAMS.map((k) => (PARAMS[k] as (v: unknown, s: PassScope) => unknown[])(w[k], scope));
    await this.q('writes', [scope.projectId, ...persons!, scope.now, ...links!, ...traits!, ...events!, ...insertIds!, ...usage!, ...outcomes!]);
  }

  /** A statement the writes waiting go before: the lock (a read follows it) or a savepoint's. */
  private async statement(name: keyof typeof SQL, values: unknown[]): Promise<void> {
    await this.flush();
    await this.q(name, values);
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
