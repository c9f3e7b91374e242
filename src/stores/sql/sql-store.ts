import { sql } from 'kysely';
import type {
  AuthRecord, Batching, Engine, ErasureTx, FoldStep, ExpiryPlan, ExpiryStep, GroupListQuery, GroupSummary, GroupView, IngestTx, PendingErasure, PersonLookup,
  PersonView, ProjectRetention, Store, StoredEvent,
} from '../port.js';
import { SqlAccounts } from './accounts.js';
import { SqlAdmin } from './admin.js';
import { type Tuned, tunedReads } from './defaults.js';
import { SqlErasureTx } from './erasure.js';
import { SqlDestinations } from './destinations.js';
import { SqlEventPages } from './event-pages.js';
import { SqlListings } from './listings.js';
import { SqlOutcomes } from './outcomes.js';
import { SqlReads } from './reads.js';
import { SqlGroups } from './groups.js';
import { SqlPlans } from './plans.js';
import { SqlPersonEvents } from './person-events.js';

/**
 * A Store from an engine: the request path, the deletion of events and the
 * lifecycle are the engine's own (called straight through); everything else
 * is written once here, in the files beside this one. An engine is one class
 * that extends this one with its Engine (sqlite/, postgres/).
 */
export class SqlStore implements Store {
  readonly batching: Batching;
  readonly keyLookupLimitMs: number;
  readonly admin: SqlAdmin;
  readonly accounts: SqlAccounts;
  readonly listings: SqlListings;
  readonly eventPages: SqlEventPages;
  readonly outcomes: SqlOutcomes;
  readonly destinations: SqlDestinations;
  readonly plans: SqlPlans;
  private readonly reads: SqlReads;
  private readonly groups: SqlGroups;
  private readonly personEvents: SqlPersonEvents;
  readonly backup?: (toFile: string) => Promise<number>;

  constructor(
    protected readonly engine: Engine,
    /** What the engine tunes its own way (sql/defaults.ts); the defaults answer the rest. */
    tuned: Tuned = {},
  ) {
    const { sql } = engine;
    const reads = tunedReads(sql, engine, tuned);
    const write = <T>(fn: () => Promise<T>): Promise<T> => engine.write(() => fn());
    this.batching = engine.batching;
    this.keyLookupLimitMs = tuned.keyLookupLimitMs ?? Infinity;
    this.admin = new SqlAdmin(sql, write);
    this.accounts = new SqlAccounts(sql, write);
    this.outcomes = new SqlOutcomes(sql, write, reads);
    this.personEvents = new SqlPersonEvents(sql, engine.destinations, { write: tuned.foldWrite ?? write, holdsWriter: tuned.foldHoldsWriter ?? false }, reads);
    this.listings = new SqlListings(sql, reads, this.personEvents);
    this.eventPages = new SqlEventPages(sql, reads);
    this.reads = new SqlReads(sql, this.eventPages);
    this.destinations = new SqlDestinations(sql, engine.destinations, tuned.destinationWrite ?? write, tuned, reads);
    this.groups = new SqlGroups(sql);
    this.plans = new SqlPlans(sql, write);
    if (engine.backup !== undefined) this.backup = (toFile) => engine.backup!(toFile);
  }

  transaction<T>(fn: (tx: IngestTx) => Promise<T>, opts?: { keep?: boolean }): Promise<T> {
    return this.engine.transaction(fn, opts);
  }

  lookUpKeys(hashes: Buffer[]): Promise<Map<string, AuthRecord>> {
    return this.engine.lookUpKeys(hashes);
  }

  recordKeyUses(uses: Map<string, number>): Promise<void> {
    return this.engine.recordKeyUses(uses);
  }

  listEvents(sourceId: string, limit: number): Promise<StoredEvent[]> {
    return this.reads.listEvents(sourceId, limit);
  }

  findPerson(projectId: string, lookup: PersonLookup): Promise<PersonView | null> {
    return this.reads.findPerson(projectId, lookup);
  }

  usage(projectId: string, month: string): Promise<number> {
    return this.reads.usage(projectId, month);
  }

  findGroup(projectId: string, groupType: string, groupKey: string): Promise<GroupView | null> {
    return this.groups.findGroup(projectId, groupType, groupKey);
  }

  listGroups(projectId: string, q: GroupListQuery): Promise<GroupSummary[]> {
    return this.groups.listGroups(projectId, q);
  }

  /** Every project's retention, deleted projects included (their events expire as well). */
  async projectRetentions(): Promise<ProjectRetention[]> {
    const { db, dialect: { bytewise } } = this.engine.sql;
    const rows = await db.selectFrom('projects').select(['id', 'retention_days']).orderBy(bytewise('id')).execute();
    return rows.map((r) => ({ projectId: r.id, retentionDays: r.retention_days }));
  }

  expireEvents(plan: ExpiryPlan, batch: number): Promise<ExpiryStep> {
    return this.engine.expireEvents(plan, batch);
  }

  erasureTransaction<T>(fn: (tx: ErasureTx) => Promise<T>): Promise<T> {
    return this.engine.write((db) => fn(new SqlErasureTx(this.engine, db)), { transaction: true });
  }

  async staleErasures(idleMs: number): Promise<PendingErasure[]> {
    const q = this.engine.sql;
    const rows = await this.engine.write((db) =>
      db.selectFrom('pending_erasures').select(['id', 'project_id', 'person_ids', 'through_seq'])
        .where('touched_at', '<=', sql<number>`${q.clock()} - ${idleMs}`).orderBy('id').execute(), { transaction: true });
    return rows.map((r) => ({ id: r.id, projectId: r.project_id, personIds: q.dialect.idsOf(r.person_ids), arrivedThrough: r.through_seq }));
  }

  deleteErasedEvents(e: PendingErasure, opts: { stopping?: () => boolean } = {}): Promise<{ eventsDeleted: number; done: boolean }> {
    const q = this.engine.sql;
    const touch = async () => void (await q.db.updateTable('pending_erasures').set({ touched_at: q.clock() }).where('id', '=', e.id).execute());
    return this.engine.deleteErasedEvents(e, { touch, stopping: opts.stopping });
  }

  async endErasure(id: number): Promise<void> {
    const { dialect } = this.engine.sql;
    await this.engine.write(async (db) => {
      // The keys of the persons' events go too: their events are all deleted by now.
      const e = await db.selectFrom('pending_erasures').select(['project_id', 'person_ids']).where('id', '=', id).executeTakeFirst();
      if (e !== undefined) await this.personEvents.forget(db, e.project_id, dialect.idsOf(e.person_ids));
      await db.deleteFrom('pending_erasures').where('id', '=', id).execute();
    }, { transaction: true });
  }

  foldProjects(): Promise<string[]> {
    return this.personEvents.foldProjects();
  }

  foldPersonEvents(projectId: string, window: number): Promise<FoldStep> {
    return this.personEvents.fold(projectId, window);
  }

  mergePersonEventRuns(projectId: string, batch: number): Promise<FoldStep> {
    return this.personEvents.merge(projectId, batch);
  }

  expirePersonEventKeys(projectId: string, before: number, after: string | null, batch: number): Promise<{ deleted: number; next: string | null }> {
    return this.personEvents.expire(projectId, before, after, batch);
  }

  async prepareToServe(): Promise<void> {
    await this.engine.prepareToServe?.();
  }

  ping(): Promise<void> {
    return this.engine.ping();
  }

  close(): Promise<void> {
    return this.engine.close();
  }
}
