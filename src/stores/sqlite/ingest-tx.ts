import {
  type GroupRef, type IngestTx, type KeyState, PASS_WRITE_ORDER, type PassQuery, type PassScope, type PassState, type PassWrites, type PersonKind, type PersonRef,
  type SuppressedIds,
} from '../port.js';
import { EventMinuteIndex } from './event-minute-index.js';
import { type SqliteInsertIds, insertIdsOf } from './insert-ids.js';
import { storeError } from './store-error.js';
import {
  GROUP_TRAIT_COLUMNS, GROUP_TRAIT_SET, MEMBER_COLUMNS, ONCE, PERSON_TRAIT_COLUMNS, TRAIT_MERGED, TRAIT_SET, TRAIT_SET_ONCE,
} from '../sql/trait-rules.js';
import type { Db } from './open.js';
import { type PersonLinkCache, personLinkCacheOf } from './person-link-cache.js';

// Lists travel as one JSON array parameter read with json_each, so a lookup
// of 500 ids is one statement, and no SQL is ever built from values.
const IN_LIST = 'IN (SELECT value FROM json_each(?))';

/** Writes one field of a bundle; `seqs` carries the rows of the events inserted to the insert_id claims that follow. */
type FieldWriter<K extends keyof PassWrites> = (tx: SqliteIngestTx, scope: PassScope, v: PassWrites[K], seqs: Map<string, number>) => void;

/**
 * Every field of a bundle, written its own way; a field added to PassWrites
 * fails to compile here until it is written (see IngestTx).
 */
const WRITERS: { [K in keyof PassWrites]-?: FieldWriter<K> } = {
  persons: (tx, scope, v) => tx.createPersons(scope.projectId, v, scope.now),
  links: (tx, scope, v) => tx.addLinks(scope.projectId, v),
  merges: (tx, scope, v) => {
    for (const m of v) tx.mergePerson(scope.projectId, m.from, m.into);
  },
  traits: (tx, scope, v) => tx.upsertTraits(scope.projectId, v),
  setOnce: (tx, scope, v) => {
    for (const t of v) tx.s.setOnce.run(scope.projectId, t.personId, t.key, t.value, t.setAt);
  },
  groupTypes: (tx, scope, v) => {
    for (const t of v) tx.s.addGroupType.run(scope.projectId, t, scope.now);
  },
  groups: (tx, scope, v) => {
    for (const g of v) tx.s.addGroup.run(scope.projectId, g.groupType, g.groupKey, scope.now);
  },
  groupTraits: (tx, scope, v) => {
    for (const t of v) tx.s.upsertGroupTrait.run(scope.projectId, t.groupType, t.groupKey, t.key, t.value, t.setAt);
  },
  members: (tx, scope, v) => {
    for (const m of v) tx.s.addMember.run(scope.projectId, m.groupType, m.groupKey, m.personId, scope.now);
  },
  events: (tx, _scope, v, seqs) => tx.insertEvents(v, seqs),
  insertIds: (tx, scope, v, seqs) => tx.addInsertIds(scope.sourceId, v, seqs),
  usage: (tx, scope, v) => {
    for (const [month, n] of v) tx.addUsage(scope.projectId, month, n);
  },
  outcomes: (tx, scope, v) => tx.addOutcomes(scope, v),
};

/**
 * The ingest transaction on SQLite. Every method runs synchronously inside the
 * transaction the caller holds; the single writer lock makes the project lock
 * free.
 */
export class SqliteIngestTx implements IngestTx {
  readonly s;
  private readonly links: PersonLinkCache;

  constructor(
    private readonly db: Db,
    private readonly insertIds: SqliteInsertIds = insertIdsOf(db),
    private readonly minutes: EventMinuteIndex = new EventMinuteIndex(db),
  ) {
    this.links = personLinkCacheOf(db);
    this.s = {
      dataVersion: db.prepare('PRAGMA data_version').pluck(),
      // The limit and the usage of the months asked, in one statement: a row
      // per month found (with the limit), or one with a null month.
      meter: db.prepare(
        `SELECT p.monthly_event_limit AS l, u.month, u.events FROM projects p
         LEFT JOIN usage u ON u.project_id = p.id AND u.month ${IN_LIST}
         WHERE p.id = ?`,
      ),
      keyStates: db.prepare(
        `SELECT k.id, k.revoked_at, k.expires_at,
                (s.deleted_at IS NULL AND p.deleted_at IS NULL AND o.deleted_at IS NULL) AS live
         FROM api_keys k JOIN sources s ON s.id = k.source_id JOIN projects p ON p.id = s.project_id JOIN orgs o ON o.id = p.org_id
         WHERE k.id ${IN_LIST}`,
      ),
      addUsage: db.prepare(
        'INSERT INTO usage (project_id, month, events) VALUES (?, ?, ?) ON CONFLICT (project_id, month) DO UPDATE SET events = events + excluded.events',
      ),
      addOutcome: db.prepare(
        `INSERT INTO outcome_counts (source_id, minute, outcome, code, project_id, count) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (source_id, minute, outcome, code) DO UPDATE SET count = count + excluded.count`,
      ),
      findLinks: db.prepare(
        `SELECT l.distinct_id AS key, coalesce(m.id, p.id) AS id, coalesce(m.kind, p.kind) AS kind
         FROM person_links l
         JOIN persons p ON p.project_id = l.project_id AND p.id = l.person_id
         LEFT JOIN persons m ON m.project_id = p.project_id AND m.id = p.merged_into
         WHERE l.project_id = ? AND l.distinct_id ${IN_LIST}`,
      ),
      findPersons: db.prepare(
        `SELECT p.id AS key, coalesce(m.id, p.id) AS id, coalesce(m.kind, p.kind) AS kind
         FROM persons p LEFT JOIN persons m ON m.project_id = p.project_id AND m.id = p.merged_into
         WHERE p.project_id = ? AND p.id ${IN_LIST}`,
      ),
      createPerson: db.prepare('INSERT INTO persons (project_id, id, kind, created_at) VALUES (?, ?, ?, ?)'),
      addLink: db.prepare('INSERT INTO person_links (project_id, distinct_id, person_id) VALUES (?, ?, ?)'),
      mergeMark: db.prepare('UPDATE persons SET merged_into = ? WHERE project_id = ? AND (id = ? OR merged_into = ?)'),
      mergeLinks: db.prepare('UPDATE person_links SET person_id = ? WHERE project_id = ? AND person_id = ?'),
      mergeTraits: db.prepare(
        `INSERT INTO ${PERSON_TRAIT_COLUMNS}
         SELECT project_id, ?, key, value, set_at, unset FROM person_traits WHERE project_id = ? AND person_id = ? ${TRAIT_MERGED}`,
      ),
      mergeMembers: db.prepare(
        `INSERT INTO ${MEMBER_COLUMNS}
         SELECT project_id, group_type, group_key, ?, created_at FROM group_members WHERE project_id = ? AND person_id = ? ${ONCE}`,
      ),
      dropMembers: db.prepare('DELETE FROM group_members WHERE project_id = ? AND person_id = ?'),
      dropTraits: db.prepare('DELETE FROM person_traits WHERE project_id = ? AND person_id = ?'),
      upsertTrait: db.prepare(`INSERT INTO ${PERSON_TRAIT_COLUMNS} VALUES (?, ?, ?, ?, ?, ?) ${TRAIT_SET}`),
      setOnce: db.prepare(`INSERT INTO ${PERSON_TRAIT_COLUMNS} VALUES (?, ?, ?, ?, ?, 0) ${TRAIT_SET_ONCE}`),
      // Ids among those asked whose person holds another distinct_id too.
      withOtherIds: db.prepare(
        `SELECT l.distinct_id FROM person_links l
         WHERE l.project_id = ? AND l.distinct_id ${IN_LIST}
           AND EXISTS (SELECT 1 FROM person_links o WHERE o.project_id = l.project_id AND o.person_id = l.person_id AND o.distinct_id <> l.distinct_id)`,
      ).pluck(),
      groupTypes: db.prepare('SELECT group_type FROM group_types WHERE project_id = ?').pluck(),
      findGroups: db.prepare(
        `SELECT g.group_type AS groupType, g.group_key AS groupKey FROM json_each(?) j
         JOIN project_groups g ON g.project_id = ? AND g.group_type = j.value ->> 0 AND g.group_key = j.value ->> 1`,
      ),
      addGroupType: db.prepare('INSERT INTO group_types (project_id, group_type, created_at) VALUES (?, ?, ?)'),
      addGroup: db.prepare(`INSERT INTO project_groups (project_id, group_type, group_key, created_at) VALUES (?, ?, ?, ?) ${ONCE}`),
      upsertGroupTrait: db.prepare(`INSERT INTO ${GROUP_TRAIT_COLUMNS} VALUES (?, ?, ?, ?, ?, ?) ${GROUP_TRAIT_SET}`),
      addMember: db.prepare(`INSERT INTO ${MEMBER_COLUMNS} VALUES (?, ?, ?, ?, ?) ${ONCE}`),
      // Two statements: in one (UNION ALL) SQLite took 15 to 20 times as long for the same rows.
      suppressed: db.prepare(`SELECT distinct_id FROM suppressed_ids WHERE project_id = ? AND distinct_id ${IN_LIST}`).pluck(),
      suppressedPersons: db.prepare(`SELECT person_id FROM suppressed_persons WHERE project_id = ? AND person_id ${IN_LIST}`).pluck(),
      insertEvent: db.prepare(
        `INSERT INTO events (id, project_id, source_id, event, distinct_id, anonymous_id, person_id, session_id,
           timestamp, received_at, insert_id, properties) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
    };
  }

  /**
   * Opens the write transaction. Every write goes through begin and commit,
   * so the insert_ids see each one start and end (insert-ids.ts), and the
   * minute index sees each one end (event-minute-index.ts).
   */
  begin(): void {
    this.insertIds.beforeWrite();
    this.db.exec('BEGIN IMMEDIATE');
    this.insertIds.beginWrite();
    this.links.beginWrite(this.s.dataVersion.get() as number);
  }

  /** Commits it; with synchronous=FULL, durably once this returns. */
  commit(): void {
    this.minutes.endWrite();
    this.insertIds.beforeCommit();
    this.db.exec('COMMIT');
    this.insertIds.committed();
    this.links.committed();
  }

  /** In a transaction that may have removed persons or links off the ingest path: the cache of links serves none of them again. */
  forgetLinks(): void {
    this.links.clear();
  }

  /** Rolls the transaction back; nothing of it is kept, in the tables or in memory. */
  rollback(): void {
    this.insertIds.rolledBack();
    this.db.exec('ROLLBACK');
  }

  read(q: PassQuery): PassState {
    let limit: number | null = null;
    const usage = new Map<string, number>();
    if (q.months.length > 0) {
      for (const r of this.s.meter.all(JSON.stringify(q.months), q.projectId) as { l: number | null; month: string | null; events: number | null }[]) {
        limit = r.l;
        if (r.month !== null) usage.set(r.month, r.events!);
      }
    }
    return {
      keys: q.keyIds.length === 0 ? new Map() : this.keyStates(q.keyIds),
      monthlyEventLimit: limit,
      usage,
      insertIds: q.insertIds.length === 0 ? new Map() : this.insertIds.find(q.sourceId, q.insertIds),
      links: q.linkedIds.length === 0 ? new Map() : this.findLinks(q.projectId, q.linkedIds),
      persons: q.personIds.length === 0 ? new Map() : refs(this.s.findPersons.all(q.projectId, JSON.stringify(q.personIds))),
      suppressed: this.findSuppressed(q.projectId, q.suppressed.distinctIds, q.suppressed.personIds),
      withOtherIds: new Set(q.withOtherIds === undefined || q.withOtherIds.length === 0 ? [] : (this.s.withOtherIds.all(q.projectId, JSON.stringify(q.withOtherIds)) as string[])),
      groupTypes: q.groupTypes === true ? (this.s.groupTypes.all(q.projectId) as string[]) : [],
      groups:
        q.groups === undefined || q.groups.length === 0
          ? []
          : (this.s.findGroups.all(JSON.stringify(q.groups.map((g) => [g.groupType, g.groupKey])), q.projectId) as GroupRef[]),
    };
  }

  write(scope: PassScope, w: PassWrites): void {
    const seqs = new Map<string, number>();
    for (const k of PASS_WRITE_ORDER) (WRITERS[k] as FieldWriter<typeof k>)(this, scope, w[k], seqs);
  }

  private keyStates(keyIds: string[]): Map<string, KeyState> {
    const rows = this.s.keyStates.all(JSON.stringify(keyIds)) as { id: string; revoked_at: number | null; expires_at: number | null; live: number }[];
    return new Map(rows.map((r) => [r.id, { revokedAt: r.revoked_at, expiresAt: r.expires_at, ownersLive: r.live === 1 }]));
  }

  async savepoint<T>(fn: () => Promise<T>): Promise<T> {
    this.db.exec('SAVEPOINT pass');
    const mark = this.insertIds.mark();
    try {
      const out = await fn();
      this.db.exec('RELEASE pass');
      return out;
    } catch (e) {
      this.insertIds.rollbackTo(mark);
      // If SQLite already rolled the whole transaction back, these throw, and the transaction fails.
      this.db.exec('ROLLBACK TO pass');
      this.db.exec('RELEASE pass');
      throw storeError(e);
    }
  }

  addUsage(projectId: string, month: string, events: number): void {
    this.s.addUsage.run(projectId, month, events);
  }

  addOutcomes(scope: PassScope, rows: PassWrites['outcomes']): void {
    for (const r of rows) this.s.addOutcome.run(scope.sourceId, r.minute, r.outcome, r.code, scope.projectId, r.count);
  }

  addInsertIds(sourceId: string, rows: PassWrites['insertIds'], seqs: Map<string, number>): void {
    if (rows.length === 0) return;
    const pairs = rows.map((r) => {
      if (r.eventId === null) return { insertId: r.insertId, eventSeq: null };
      const seq = seqs.get(r.eventId);
      if (seq === undefined) throw new Error(`event ${r.eventId} was not inserted in this bundle`);
      return { insertId: r.insertId, eventSeq: seq };
    });
    this.insertIds.add(sourceId, pairs);
  }

  /** Served from memory where it can be (person-link-cache.ts). */
  private findLinks(projectId: string, distinctIds: string[]): Map<string, PersonRef> {
    const found = new Map<string, PersonRef>();
    const rest: string[] = [];
    for (const id of distinctIds) {
      const ref = this.links.get(projectId, id);
      if (ref === undefined) rest.push(id);
      else found.set(id, ref);
    }
    if (rest.length === 0) return found;
    for (const [id, ref] of refs(this.s.findLinks.all(projectId, JSON.stringify(rest)))) {
      found.set(id, ref);
      this.links.read(projectId, id, ref);
    }
    return found;
  }

  createPersons(projectId: string, persons: PassWrites['persons'], createdAt: number): void {
    for (const p of persons) this.s.createPerson.run(projectId, p.id, p.kind, createdAt);
  }

  addLinks(projectId: string, links: PassWrites['links']): void {
    for (const l of links) {
      this.links.link(projectId, l.distinctId);
      this.s.addLink.run(projectId, l.distinctId, l.personId);
    }
  }

  mergePerson(projectId: string, from: string, into: string): void {
    if (from === into) return;
    this.links.merge(projectId, from);
    this.s.mergeMark.run(into, projectId, from, from);
    this.s.mergeLinks.run(into, projectId, from);
    this.s.mergeTraits.run(into, projectId, from);
    this.s.dropTraits.run(projectId, from);
    this.s.mergeMembers.run(into, projectId, from);
    this.s.dropMembers.run(projectId, from);
  }

  upsertTraits(projectId: string, traits: PassWrites['traits']): void {
    // An unset keeps a JSON null as its value: the column holds JSON, and reads skip the row.
    for (const t of traits) this.s.upsertTrait.run(projectId, t.personId, t.key, t.value ?? 'null', t.setAt, t.value === null ? 1 : 0);
  }

  private findSuppressed(projectId: string, distinctIds: string[], personIds: string[]): SuppressedIds {
    const ids = (s: { all: (...a: unknown[]) => unknown[] }, list: string[]) => new Set(list.length === 0 ? [] : (s.all(projectId, JSON.stringify(list)) as string[]));
    return { distinctIds: ids(this.s.suppressed, distinctIds), personIds: ids(this.s.suppressedPersons, personIds) };
  }

  insertEvents(rows: PassWrites['events'], seqs: Map<string, number>): void {
    for (const e of rows) {
      const { lastInsertRowid } = this.s.insertEvent.run(
        e.id, e.projectId, e.sourceId, e.event, e.distinctId, e.anonymousId, e.personId, e.sessionId,
        e.timestamp, e.receivedAt, e.insertId, e.properties,
      );
      if (e.insertId !== null) seqs.set(e.id, Number(lastInsertRowid));
    }
  }
}

function refs(rows: unknown[]): Map<string, PersonRef> {
  return new Map((rows as { key: string; id: string; kind: PersonKind }[]).map((r) => [r.key, { id: r.id, kind: r.kind }]));
}
