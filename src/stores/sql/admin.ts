import type { Kysely } from 'kysely';
import type { AdminStore, KeyRecord, Org, Project, Source } from '../port.js';
import { type SqlEngine, type WriteTurn, atOnce } from './engine.js';
import { toKey, toOrg, toProject, toSource } from './rows.js';
import type { Database } from './schema.js';

type Db = Kysely<Database>;

/** Organizations, projects, sources and keys, on either SQL engine. Deletion is a mark, so history stays readable. */
export class SqlAdmin implements AdminStore {
  private readonly db: Db;

  constructor(
    private readonly engine: SqlEngine,
    /**
     * The engine's turn for writes; on SQLite it also marks keys and their
     * owners as changed once the write is done (keysChangeMark).
     */
    private readonly write: WriteTurn = atOnce,
  ) {
    this.db = engine.db;
  }

  async createOrg(o: Org): Promise<void> {
    await this.write(() => this.db.insertInto('orgs').values({ id: o.id, name: o.name, created_at: o.createdAt }).execute());
  }

  async getOrg(id: string): Promise<Org | null> {
    const r = await this.db.selectFrom('orgs').selectAll().where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst();
    return r ? toOrg(r) : null;
  }

  async defaultOrg(make: () => Org): Promise<Org> {
    const live = (db: Db) => db.selectFrom('orgs').selectAll().where('is_default', '=', true).where('deleted_at', 'is', null).executeTakeFirst();
    const found = await live(this.db);
    if (found) return toOrg(found);
    return this.write(() => this.db.transaction().execute(async (trx) => {
      const r = await live(trx);
      if (r) return toOrg(r);
      const o = make();
      // On PostgreSQL a unique index on the live default lets one of two
      // racing servers in; the other reads what the winner wrote.
      const inserted = await trx.insertInto('orgs').values({ id: o.id, name: o.name, is_default: true, created_at: o.createdAt })
        .onConflict((c) => c.doNothing()).executeTakeFirst();
      if (inserted.numInsertedOrUpdatedRows === 1n) return o;
      return toOrg((await live(trx))!);
    }));
  }

  async deleteOrg(id: string, at: number): Promise<boolean> {
    return this.keyChange(
      (db) => db.selectFrom('projects').select('id').where('org_id', '=', id).orderBy(this.engine.bytewise('id')),
      (db) => db.updateTable('orgs').set({ deleted_at: at }).where('id', '=', id).where('deleted_at', 'is', null),
    );
  }

  async createProject(p: Project): Promise<void> {
    await this.write(() => this.db.insertInto('projects').values({
      id: p.id, org_id: p.orgId, name: p.name, api_enabled: p.apiEnabled,
      monthly_event_limit: p.monthlyEventLimit, retention_days: p.retentionDays, created_at: p.createdAt,
    }).execute());
  }

  async getProject(id: string): Promise<Project | null> {
    const r = await this.db.selectFrom('projects as p').innerJoin('orgs as o', 'o.id', 'p.org_id').selectAll('p')
      .where('p.id', '=', id).where('p.deleted_at', 'is', null).where('o.deleted_at', 'is', null).executeTakeFirst();
    return r ? toProject(r) : null;
  }

  async updateProject(id: string, patch: Partial<Pick<Project, 'apiEnabled' | 'monthlyEventLimit' | 'retentionDays'>>): Promise<Project | null> {
    // null is a value for the limit (no limit): only what is given is set.
    const set = {
      ...(patch.apiEnabled !== undefined && { api_enabled: patch.apiEnabled }),
      ...(patch.monthlyEventLimit !== undefined && { monthly_event_limit: patch.monthlyEventLimit }),
      ...(patch.retentionDays !== undefined && { retention_days: patch.retentionDays }),
    };
    if (Object.keys(set).length > 0) await this.write(() => this.db.updateTable('projects').set(set).where('id', '=', id).execute());
    return this.getProject(id);
  }

  async deleteProject(id: string, at: number): Promise<boolean> {
    return this.keyChange(
      (db) => db.selectFrom('projects').select('id').where('id', '=', id),
      (db) => db.updateTable('projects').set({ deleted_at: at }).where('id', '=', id).where('deleted_at', 'is', null),
    );
  }

  async createSource(s: Source): Promise<void> {
    await this.write(() => this.db.insertInto('sources').values({
      id: s.id, project_id: s.projectId, name: s.name, filter_bots: s.filterBots, record_ip: s.recordIp, created_at: s.createdAt,
    }).execute());
  }

  async getSource(id: string): Promise<Source | null> {
    const r = await this.db.selectFrom('sources as s').innerJoin('projects as p', 'p.id', 's.project_id').innerJoin('orgs as o', 'o.id', 'p.org_id')
      .selectAll('s').where('s.id', '=', id)
      .where('s.deleted_at', 'is', null).where('p.deleted_at', 'is', null).where('o.deleted_at', 'is', null).executeTakeFirst();
    return r ? toSource(r) : null;
  }

  async updateSource(id: string, patch: Partial<Pick<Source, 'filterBots' | 'recordIp'>>): Promise<Source | null> {
    const set = {
      ...(patch.filterBots !== undefined && { filter_bots: patch.filterBots }),
      ...(patch.recordIp !== undefined && { record_ip: patch.recordIp }),
    };
    if (Object.keys(set).length > 0) await this.write(() => this.db.updateTable('sources').set(set).where('id', '=', id).execute());
    return this.getSource(id);
  }

  async deleteSource(id: string, at: number): Promise<boolean> {
    return this.keyChange(
      (db) => db.selectFrom('sources').select('project_id as id').where('id', '=', id),
      (db) => db.updateTable('sources').set({ deleted_at: at }).where('id', '=', id).where('deleted_at', 'is', null),
    );
  }

  async addKey(
    key: KeyRecord,
    opts: { fits: (keysOfSource: KeyRecord[]) => boolean; replaces?: { keyId: string; expiresAt: number } },
  ): Promise<'ok' | 'too_many_keys'> {
    return this.write(() => this.db.transaction().execute(async (trx): Promise<'ok' | 'too_many_keys'> => {
      // Locking the source's row (or, on SQLite, the file) makes two key
      // changes of one source take turns on every server; the count below
      // then sees the other's commit.
      await trx.selectFrom('sources').select('id').where('id', '=', key.sourceId).$if(this.engine.rowLocks, (q) => q.forUpdate()).execute();
      if (!opts.fits(await this.keysOf(trx, key.sourceId))) return 'too_many_keys';
      if (opts.replaces) {
        await trx.updateTable('api_keys').set({ expires_at: opts.replaces.expiresAt }).where('id', '=', opts.replaces.keyId).execute();
      }
      await trx.insertInto('api_keys')
        .values({ id: key.id, source_id: key.sourceId, hash: key.hash, last_four: key.lastFour, created_at: key.createdAt }).execute();
      return 'ok';
    }));
  }

  async getKey(id: string): Promise<KeyRecord | null> {
    const r = await this.db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
    return r ? toKey(r) : null;
  }

  listKeys(sourceId: string): Promise<KeyRecord[]> {
    return this.keysOf(this.db, sourceId);
  }

  async revokeKey(id: string, at: number): Promise<boolean> {
    return this.keyChange(
      (db) => db.selectFrom('api_keys as k').innerJoin('sources as s', 's.id', 'k.source_id').select('s.project_id as id').where('k.id', '=', id),
      (db) => db.updateTable('api_keys').set((eb) => ({ revoked_at: eb.fn.coalesce('revoked_at', eb.val(at)) })).where('id', '=', id),
    );
  }

  private async keysOf(db: Db, sourceId: string): Promise<KeyRecord[]> {
    const rows = await db.selectFrom('api_keys').selectAll().where('source_id', '=', sourceId)
      .orderBy('created_at').orderBy(this.engine.bytewise('id')).execute();
    return rows.map(toKey);
  }

  /**
   * A change that takes keys out of service, made under the lock of every
   * project it touches (`projects`, in id order, so two such changes never
   * deadlock): a write that checked its key under the lock has committed by
   * then, and any later one sees the change.
   */
  private keyChange(
    projects: (db: Db) => { execute(): Promise<{ id: string }[]> },
    change: (db: Db) => { executeTakeFirst(): Promise<{ numUpdatedRows: bigint }> },
  ): Promise<boolean> {
    return this.write(() => this.db.transaction().execute(async (trx) => {
      await this.engine.lockProjects(trx, (await projects(trx).execute()).map((p) => p.id));
      return (await change(trx).executeTakeFirst()).numUpdatedRows > 0n;
    }));
  }
}
