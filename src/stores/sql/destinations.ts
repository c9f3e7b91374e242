import { type Selectable, sql } from 'kysely';
import type { DeliveryEvent, DeliveryRead, DeliveryReads, DestinationConfig, DestinationRecord, DestinationStore, FilePlan } from '../port-destinations.js';
import type { DestinationsEngine } from '../port.js';
import type { Tuned, Tuning } from './defaults.js';
import { type SqlEngine, type WriteTurn, atOnce } from './engine.js';
import { eventRows } from './event-pages.js';
import { isSet } from './rows.js';
import type { Database } from './schema.js';

/** The default of `Tuning.readPast`, one query for both engines (PostgreSQL's; SQLite has its own). */
async function readPastQuery(engine: SqlEngine, projectId: string, after: number, upTo: number, limit: number): Promise<DeliveryEvent[]> {
  const rows = await eventRows(engine).select('e.source_id')
    .where('e.project_id', '=', projectId).where('e.seq', '>', after).where('e.seq', '<=', upTo)
    .orderBy('e.seq').limit(limit).execute();
  return rows.map((r) => ({
    seq: r.seq, id: r.id, sourceId: r.source_id, event: r.event, distinctId: r.distinct_id, anonymousId: r.anonymous_id,
    personId: r.person_id, sessionId: r.session_id, timestamp: r.timestamp, receivedAt: r.received_at,
    insertId: r.insert_id, properties: r.properties,
  }));
}

const toRecord = (r: Selectable<Database['destinations']>): DestinationRecord => ({
  id: r.id, projectId: r.project_id, kind: r.kind, config: JSON.parse(r.config) as DestinationConfig,
  sources: JSON.parse(r.sources) as string[], events: JSON.parse(r.events) as string[],
  paused: isSet(r.paused), cursor: r.cursor_seq, generation: r.generation, delivered: r.delivered,
  lastError: r.last_error, lastDeliveredAt: r.last_delivered_at, createdAt: r.created_at,
  pausedReason: r.paused_reason, file: r.file_plan === null ? null : (JSON.parse(r.file_plan) as FilePlan),
});

/** Refuses: the delivery process only reads. */
const readsOnly: WriteTurn = () => Promise.reject(new Error('Delivery reads only.'));

/** Destinations, their cursors and leases, on either SQL engine (the contract: port-destinations.ts). */
export class SqlDestinations implements DestinationStore {
  private readonly db;
  private readonly e: DestinationsEngine & Pick<Tuning, 'readPast'> & { write: WriteTurn; bound: WriteTurn };
  /**
   * Where the counts of what is past a cursor run (a lag counts up to a
   * million events): in a server, the console's page reads (on SQLite their
   * thread, never the connection that writes nor the thread that answers
   * requests; on PostgreSQL their gate); in the delivery process, its own
   * connection, in delivery's turn.
   */
  private readonly scans: Pick<Tuning, 'pageRows'>;

  constructor(
    private readonly engine: SqlEngine,
    given: DestinationsEngine,
    /** The turn of its writes: Engine.write, or the engine's Tuning.destinationWrite. */
    write: WriteTurn,
    tuned: Tuned,
    scans?: Pick<Tuning, 'pageRows'>,
  ) {
    this.db = engine.db;
    const bound = tuned.deliveryTurn ?? atOnce;
    this.e = {
      write, bound, head: (p) => given.head(p), positionBefore: (p, at) => given.positionBefore(p, at),
      readPast: tuned.readPast === undefined ? (...a) => readPastQuery(engine, ...a) : (...a) => tuned.readPast!(...a),
    };
    this.scans = scans ?? { pageRows: (query) => bound(async () => (await engine.db.executeQuery(query)).rows) };
  }

  create(d: DestinationRecord): Promise<void> {
    return this.e.write(async () => {
      await this.db.insertInto('destinations').values({
        id: d.id, project_id: d.projectId, kind: d.kind, config: JSON.stringify(d.config),
        sources: JSON.stringify(d.sources), events: JSON.stringify(d.events), paused: d.paused,
        cursor_seq: d.cursor, generation: d.generation, delivered: d.delivered, last_error: d.lastError,
        last_delivered_at: d.lastDeliveredAt, lease_holder: null, lease_until: 0, created_at: d.createdAt,
        paused_reason: d.pausedReason, file_plan: d.file === null ? null : JSON.stringify(d.file),
      }).execute();
    });
  }

  /**
   * Destinations of live projects only. Deleting a project (or its
   * organization) deletes its destinations in the same transaction; this
   * keeps one made in a race with that deletion from being seen, or
   * delivered, all the same.
   */
  private live() {
    return this.db.selectFrom('destinations as d').innerJoin('projects as p', 'p.id', 'd.project_id').innerJoin('orgs as o', 'o.id', 'p.org_id')
      .selectAll('d').where('p.deleted_at', 'is', null).where('o.deleted_at', 'is', null);
  }

  async get(id: string): Promise<DestinationRecord | null> {
    const r = await this.e.bound(() => this.live().where('d.id', '=', id).executeTakeFirst());
    return r === undefined ? null : toRecord(r);
  }

  async list(projectId: string): Promise<DestinationRecord[]> {
    const rows = await this.live().where('d.project_id', '=', projectId).orderBy('d.created_at').orderBy('d.id').execute();
    return rows.map(toRecord);
  }

  async all(): Promise<DestinationRecord[]> {
    const rows = await this.e.bound(() => this.live().orderBy('d.id').execute());
    return rows.map(toRecord);
  }

  async setPaused(id: string, paused: boolean, reason: string | null = null): Promise<DestinationRecord | null> {
    await this.e.write(() => this.db.updateTable('destinations').set({ paused, paused_reason: paused ? reason : null }).where('id', '=', id).execute());
    return this.get(id);
  }

  async setConfig(id: string, config: DestinationConfig): Promise<boolean> {
    const r = await this.e.write(() => this.db.updateTable('destinations').set({ config: JSON.stringify(config) }).where('id', '=', id).executeTakeFirst());
    return r.numUpdatedRows > 0n;
  }

  async planFile(id: string, holder: string, plan: FilePlan): Promise<boolean> {
    const r = await this.e.write(() =>
      this.e.bound(() =>
        this.db.updateTable('destinations').set({ file_plan: JSON.stringify(plan) })
          .where('id', '=', id).where('lease_holder', '=', holder).where('generation', '=', plan.generation)
          .executeTakeFirst(),
      ),
    );
    return r.numUpdatedRows > 0n;
  }

  async replay(id: string, cursor: number): Promise<boolean> {
    const r = await this.e.write(() =>
      this.db.updateTable('destinations').set((eb) => ({ cursor_seq: cursor, generation: eb('generation', '+', 1) })).where('id', '=', id).executeTakeFirst(),
    );
    return r.numUpdatedRows > 0n;
  }

  async delete(id: string): Promise<boolean> {
    const r = await this.e.write(() => this.db.deleteFrom('destinations').where('id', '=', id).executeTakeFirst());
    return r.numDeletedRows > 0n;
  }

  head(projectId: string): Promise<number> {
    return this.e.bound(() => this.e.head(projectId));
  }

  positionBefore(projectId: string, at: number): Promise<number> {
    return this.e.bound(() => this.e.positionBefore(projectId, at));
  }

  async read(projectId: string, after: number, upTo: number, limit: number): Promise<DeliveryRead> {
    if (upTo <= after) return { events: [], through: after };
    const events = await this.e.bound(() => this.e.readPast(projectId, after, upTo, limit));
    const last = events.at(-1);
    return { events, through: events.length === limit && last !== undefined ? last.seq : upTo };
  }

  async countPast(d: Pick<DestinationRecord, 'projectId' | 'sources' | 'events'>, after: number, upTo: number, cap: number): Promise<number> {
    if (upTo <= after) return 0;
    const past = this.past(d, after, upTo).select(sql<number>`1`.as('one')).limit(cap);
    const [r] = await this.scans.pageRows(this.db.selectFrom(past.as('past')).select((eb) => eb.fn.countAll<number>().as('n')).compile());
    return Number(r?.n ?? 0);
  }

  async oldestPast(d: Pick<DestinationRecord, 'projectId' | 'sources' | 'events'>, after: number, upTo: number): Promise<number | null> {
    if (upTo <= after) return null;
    const [r] = await this.scans.pageRows(this.past(d, after, upTo).select('received_at').orderBy('seq').limit(1).compile());
    return r === undefined ? null : Number(r.received_at);
  }

  /** The events a destination takes past `after` up to `upTo` (a query to compile: `scans` runs it). */
  private past(d: Pick<DestinationRecord, 'projectId' | 'sources' | 'events'>, after: number, upTo: number) {
    let q = this.db.selectFrom('events').where('project_id', '=', d.projectId).where('seq', '>', after).where('seq', '<=', upTo);
    if (d.sources.length > 0) q = q.where('source_id', 'in', d.sources);
    if (d.events.length > 0) q = q.where('event', 'in', d.events);
    return q;
  }

  /** The lease is timed by the store's clock (the database server's on PostgreSQL), read once in the statement that takes it. */
  async takeLease(id: string, holder: string, ms: number): Promise<boolean> {
    const now = sql<number>`(SELECT at FROM now)`;
    const r = await this.e.write(() =>
      this.e.bound(() =>
        this.db.with('now', (db) => db.selectNoFrom(sql<number>`${this.engine.clock()}`.as('at')))
          .updateTable('destinations').set({ lease_holder: holder, lease_until: sql<number>`${now} + ${ms}` })
          .where('id', '=', id)
          .where((eb) => eb.or([eb('lease_holder', '=', holder), eb('lease_holder', 'is', null), eb('lease_until', '<', now)]))
          .executeTakeFirst(),
      ),
    );
    return r.numUpdatedRows > 0n;
  }

  async releaseLease(id: string, holder: string): Promise<void> {
    await this.e.write(() =>
      this.e.bound(() =>
        this.db.updateTable('destinations').set({ lease_holder: null, lease_until: 0 }).where('id', '=', id).where('lease_holder', '=', holder).execute(),
      ),
    );
  }

  async advance(id: string, holder: string, generation: number, cursor: number, count: number, at: number): Promise<boolean> {
    const r = await this.e.write(() =>
      this.e.bound(() =>
        this.db.updateTable('destinations')
          .set((eb) => ({ cursor_seq: cursor, delivered: eb('delivered', '+', count), last_error: null, ...(count > 0 ? { last_delivered_at: at } : {}) }))
          .where('id', '=', id).where('lease_holder', '=', holder).where('generation', '=', generation)
          .executeTakeFirst(),
      ),
    );
    return r.numUpdatedRows > 0n;
  }

  async failed(id: string, holder: string, error: string): Promise<boolean> {
    const r = await this.e.write(() =>
      this.e.bound(() =>
        this.db.updateTable('destinations').set({ last_error: error }).where('id', '=', id).where('lease_holder', '=', holder).executeTakeFirst(),
      ),
    );
    return r.numUpdatedRows > 0n;
  }
}

/** Delivery's reads in the delivery process, over the connection its engine opened for them, and how to end it. */
export function deliveryReads(engine: SqlEngine, e: DestinationsEngine, tuned: Tuned, close: () => Promise<void>): DeliveryReads {
  const destinations = new SqlDestinations(engine, e, readsOnly, tuned);
  return {
    get: (id) => destinations.get(id),
    read: (...a) => destinations.read(...a),
    countPast: (...a) => destinations.countPast(...a),
    oldestPast: (...a) => destinations.oldestPast(...a),
    close,
  };
}
