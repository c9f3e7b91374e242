import type { KeyRecord, NewEventRow, Org, PersonKind, Project, Source, StoredEvent } from '../port.js';
import type { UserRecord } from '../port-console.js';

/** An organization with what only the store keeps. */
export interface OrgRow extends Org {
  isDefault: boolean;
  deletedAt: number | null;
}
/** A project and its deletion mark. */
export interface ProjectRow extends Project {
  deletedAt: number | null;
}
/** A source and its deletion mark. */
export interface SourceRow extends Source {
  deletedAt: number | null;
}
/** A person, under its project and id. */
export interface PersonRow {
  kind: PersonKind;
  mergedInto: string | null;
  createdAt: number;
}
/** A trait's value, under its project, person and key. */
export interface TraitRow {
  /** JSON text. */
  value: string;
  setAt: number;
}
/** An event and its place in arrival order. */
export interface EventRow extends NewEventRow {
  seq: number;
}

/** A console session, under the hex of its token hash. */
export interface SessionRow {
  userId: string;
  csrfToken: string;
  createdAt: number;
  lastSeenAt: number;
}
/** Sign-in failures counted under one key. */
export interface LoginFailureRow {
  failures: number;
  firstAt: number;
  blockedUntil: number;
}

/**
 * Every table, as maps. Rows keyed by a user-given text (a distinct_id, a
 * trait key, an insert_id) sit in a map of their own per owner, so no
 * separator can make two keys meet.
 */
export interface Tables {
  orgs: Map<string, OrgRow>;
  projects: Map<string, ProjectRow>;
  sources: Map<string, SourceRow>;
  keys: Map<string, KeyRecord>;
  /** project → person id → person. */
  persons: Map<string, Map<string, PersonRow>>;
  /** project → distinct_id → person id. */
  links: Map<string, Map<string, string>>;
  /** project → person id → trait key → value. */
  traits: Map<string, Map<string, Map<string, TraitRow>>>;
  events: EventRow[];
  /** source → insert_id → event id (null for an identify). */
  insertIds: Map<string, Map<string, string | null>>;
  /** project → month → events. */
  usage: Map<string, Map<string, number>>;
  users: Map<string, UserRecord>;
  /** user → the organizations it is a member of. */
  memberships: Map<string, Set<string>>;
  /** hex of the token hash → session (kept as text: the copies share no Buffer). */
  sessions: Map<string, SessionRow>;
  /** throttling key → failures. */
  loginFailures: Map<string, LoginFailureRow>;
  /** project → distinct_id whose items are dropped (erased with suppression) → the person of its erasure (null: none recorded). */
  suppressed: Map<string, Map<string, string | null>>;
  /** project → person id whose items are dropped (an erased person's own id) → the person of its erasure. */
  suppressedPersons: Map<string, Map<string, string>>;
}

const emptyTables = (): Tables => ({
  orgs: new Map(),
  projects: new Map(),
  sources: new Map(),
  keys: new Map(),
  persons: new Map(),
  links: new Map(),
  traits: new Map(),
  events: [],
  insertIds: new Map(),
  usage: new Map(),
  users: new Map(),
  memberships: new Map(),
  sessions: new Map(),
  loginFailures: new Map(),
  suppressed: new Map(),
  suppressedPersons: new Map(),
});

/** The inner map of `outer` under `key`, made on first use. */
export function inner<K, V>(outer: Map<string, Map<K, V>>, key: string): Map<K, V> {
  let m = outer.get(key);
  if (m === undefined) outer.set(key, (m = new Map()));
  return m;
}

/** An event as the port shows it, with its person now (one step, as the other engines read it). */
export function storedEvent(t: Tables, e: EventRow): StoredEvent {
  return {
    id: e.id,
    event: e.event,
    distinctId: e.distinctId,
    anonymousId: e.anonymousId,
    // A merge re-points earlier merges, so one step reaches the person now.
    personId: t.persons.get(e.projectId)?.get(e.personId)?.mergedInto ?? e.personId,
    sessionId: e.sessionId,
    timestamp: e.timestamp,
    receivedAt: e.receivedAt,
    insertId: e.insertId,
    properties: JSON.parse(e.properties) as Record<string, unknown>,
  };
}

/** UTF-8 byte order, as SQLite's BINARY and PostgreSQL's "C" collation sort. */
export const byteOrder = (a: string, b: string): number => Buffer.compare(Buffer.from(a), Buffer.from(b));

/**
 * One in-memory database, which several MemoryStores may share as servers
 * share a database. Writes take turns (`exclusive`); a transaction works on a
 * copy of the tables and puts it in place on commit, so readers only ever see
 * committed data and a rollback is dropping the copy. Copying everything is
 * simple and plainly correct, and this engine is for tests and reference,
 * not for volume.
 */
export class MemoryDatabase {
  tables: Tables = emptyTables();
  /** Moves with every change to keys, sources, projects and orgs. */
  keysVersion = 0;
  private turn: Promise<unknown> = Promise.resolve();

  /** Runs `fn` when no other write runs, and none starts before it ends. */
  exclusive<T>(fn: () => Promise<T> | T): Promise<T> {
    const result = this.turn.then(fn);
    this.turn = result.catch(() => undefined);
    return result;
  }

  /** A copy of the tables that shares nothing with them. */
  copy(t: Tables = this.tables): Tables {
    // structuredClone would turn key hashes (Buffers) into plain byte arrays;
    // a hash is never changed in place, so the copies may share it.
    const { keys, ...rest } = t;
    return { ...structuredClone(rest), keys: new Map([...keys].map(([id, k]) => [id, { ...k }])) };
  }
}
