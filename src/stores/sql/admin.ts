import type { Kysely, Updateable } from 'kysely';
import type { AdminStore, KeyRecord, Org, Project, Source } from '../port.js';
import { SqlStorePart } from './engine.js';
import { toKey, toOrg, toProject, toSource } from './rows.js';
import type { Database } from './schema.js';

type Db = Kysely<Database>;

/** The columns given a value; those left undefined are not set. */
const given = <T extends object>(columns: T): { [K in keyof T]?: Exclude<T[K], undefined> } =>
  Object.fromEntries(Object.entries(columns).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> };

/** Organizations, projects, sources and keys, on either SQL engine. Deletion is a mark, so history stays readable. */
export class SqlAdmin extends SqlStorePart implements AdminStore {
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
    const projects = (db: Db) => db.selectFrom('projects').select('id').where('org_id', '=', id).orderBy(this.engine.dialect.bytewise('id'));
    return this.markDeleted('orgs', id, at, projects, { dropDestinations: true });
  }

  async createProject(p: Project): Promise<void> {
    await this.write(async () => {
      await this.db.insertInto('projects').values({
        id: p.id, org_id: p.orgId, name: p.name, api_enabled: p.apiEnabled,
        monthly_event_limit: p.monthlyEventLimit, retention_days: p.retentionDays, created_at: p.createdAt,
      }).execute();
      // No event stored so far is the new project's: its fold of events by person (person-events.ts)
      // starts past them rather than reading every one for nothing. Without the row, it starts at 0.
      await this.db.insertInto('person_events_folded').values({ project_id: p.id, through: this.engine.newestArrival(), last_run: 0 })
        .onConflict((c) => c.doNothing()).execute();
    });
  }

  async getProject(id: string): Promise<Project | null> {
    const r = await this.db.selectFrom('projects as p').innerJoin('orgs as o', 'o.id', 'p.org_id').selectAll('p')
      .where('p.id', '=', id).where('p.deleted_at', 'is', null).where('o.deleted_at', 'is', null).executeTakeFirst();
    return r ? toProject(r) : null;
  }

  async updateProject(id: string, patch: Partial<Pick<Project, 'apiEnabled' | 'monthlyEventLimit' | 'retentionDays'>>): Promise<Project | null> {
    // null is a value for the limit (no limit): only undefined leaves a column as it is.
    await this.patch('projects', id, given({
      api_enabled: patch.apiEnabled, monthly_event_limit: patch.monthlyEventLimit, retention_days: patch.retentionDays,
    }));
    return this.getProject(id);
  }

  async deleteProject(id: string, at: number): Promise<boolean> {
    return this.markDeleted('projects', id, at, (db) => db.selectFrom('projects').select('id').where('id', '=', id), { dropDestinations: true });
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
    await this.patch('sources', id, given({ filter_bots: patch.filterBots, record_ip: patch.recordIp }));
    return this.getSource(id);
  }

  async deleteSource(id: string, at: number): Promise<boolean> {
    return this.markDeleted('sources', id, at, (db) => db.selectFrom('sources').select('project_id as id').where('id', '=', id));
  }

  async addKey(
    key: KeyRecord,
    opts: { fits: (keysOfSource: KeyRecord[]) => boolean; replaces?: { keyId: string; expiresAt: number } },
  ): Promise<'ok' | 'too_many_keys'> {
    return this.write(() => this.db.transaction().execute(async (trx): Promise<'ok' | 'too_many_keys'> => {
      // Locking the source's row (or, on SQLite, the file) makes two key
      // changes of one source take turns on every server; the count below
      // then sees the other's commit.
      await trx.selectFrom('sources').select('id').where('id', '=', key.sourceId).$if(this.engine.dialect.rowLocks, (q) => q.forUpdate()).execute();
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
      async (db) => (await db.updateTable('api_keys').set((eb) => ({ revoked_at: eb.fn.coalesce('revoked_at', eb.val(at)) })).where('id', '=', id).executeTakeFirst()).numUpdatedRows > 0n,
    );
  }

  /** Sets the columns given, if any. */
  private async patch(table: 'projects' | 'sources', id: string, set: Updateable<Database['projects']> | Updateable<Database['sources']>): Promise<void> {
    if (Object.keys(set).length === 0) return;
    await this.write(() => this.db.updateTable(table).set(set).where('id', '=', id).execute());
  }

  /**
   * Deletion is a mark, made as a key change: it takes the keys of what it
   * marks out of service. A deleted project's destinations (with their
   * cursors and leases) go in the same transaction, not with a mark: each
   * server's delivery finds its destination gone at its next look and stops
   * (docs/destinations.md), and no secret or URL of it stays behind.
   */
  private markDeleted(
    table: 'orgs' | 'projects' | 'sources',
    id: string,
    at: number,
    projects: (db: Db) => { execute(): Promise<{ id: string }[]> },
    opts: { dropDestinations?: boolean } = {},
  ): Promise<boolean> {
    return this.keyChange(projects, async (db, projectIds) => {
      const marked = (await db.updateTable(table).set({ deleted_at: at }).where('id', '=', id).where('deleted_at', 'is', null).executeTakeFirst()).numUpdatedRows > 0n;
      if (marked && opts.dropDestinations === true && projectIds.length > 0) await db.deleteFrom('destinations').where('project_id', 'in', projectIds).execute();
      return marked;
    });
  }

  private async keysOf(db: Db, sourceId: string): Promise<KeyRecord[]> {
    const rows = await db.selectFrom('api_keys').selectAll().where('source_id', '=', sourceId)
      .orderBy('created_at').orderBy(this.engine.dialect.bytewise('id')).execute();
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
    change: (db: Db, projectIds: string[]) => Promise<boolean>,
  ): Promise<boolean> {
    return this.write(() => this.db.transaction().execute(async (trx) => {
      const ids = (await projects(trx).execute()).map((p) => p.id);
      await this.engine.lockProjects(trx, ids);
      return change(trx, ids);
    }));
  }
}
