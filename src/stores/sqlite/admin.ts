import type { AdminStore, KeyRecord, Org, Project, Source } from '../port.js';
import type { Db } from './open.js';

interface OrgRow { id: string; name: string; created_at: number }
interface ProjectRow { id: string; org_id: string; name: string; api_enabled: number; monthly_event_limit: number | null; retention_days: number; created_at: number }
interface SourceRow { id: string; project_id: string; name: string; filter_bots: number; record_ip: number; created_at: number }
interface KeyRow {
  id: string; source_id: string; hash: Buffer; last_four: string; created_at: number;
  last_used_at: number | null; expires_at: number | null; revoked_at: number | null;
}

export const toOrg = (r: OrgRow): Org => ({ id: r.id, name: r.name, createdAt: r.created_at });
export const toProject = (r: ProjectRow): Project => ({
  id: r.id, orgId: r.org_id, name: r.name, apiEnabled: r.api_enabled === 1,
  monthlyEventLimit: r.monthly_event_limit, retentionDays: r.retention_days, createdAt: r.created_at,
});
export const toSource = (r: SourceRow): Source => ({
  id: r.id, projectId: r.project_id, name: r.name, filterBots: r.filter_bots === 1,
  recordIp: r.record_ip === 1, createdAt: r.created_at,
});
const toKey = (r: KeyRow): KeyRecord => ({
  id: r.id, sourceId: r.source_id, hash: r.hash, lastFour: r.last_four, createdAt: r.created_at,
  lastUsedAt: r.last_used_at, expiresAt: r.expires_at, revokedAt: r.revoked_at,
});

/** Organizations, projects, sources and keys on SQLite. Deletion is a mark, so history stays readable. */
export class SqliteAdmin implements AdminStore {
  constructor(
    private readonly db: Db,
    /**
     * Runs a write in its turn with the store's transactions (a write never
     * lands inside one), and marks keys and their owners as changed.
     */
    private readonly write: <T>(fn: () => T) => Promise<T> = async (fn) => fn(),
  ) {}

  async createOrg(o: Org): Promise<void> {
    await this.write(() => this.db.prepare('INSERT INTO orgs (id, name, created_at) VALUES (?, ?, ?)').run(o.id, o.name, o.createdAt));
  }

  async getOrg(id: string): Promise<Org | null> {
    const r = this.db.prepare('SELECT * FROM orgs WHERE id = ? AND deleted_at IS NULL').get(id) as OrgRow | undefined;
    return r ? toOrg(r) : null;
  }

  async defaultOrg(make: () => Org): Promise<Org> {
    return this.write(() => this.db.transaction(() => {
      const r = this.db.prepare('SELECT * FROM orgs WHERE is_default = 1 AND deleted_at IS NULL').get() as OrgRow | undefined;
      if (r) return toOrg(r);
      const o = make();
      this.db.prepare('INSERT INTO orgs (id, name, is_default, created_at) VALUES (?, ?, 1, ?)').run(o.id, o.name, o.createdAt);
      return o;
    }).immediate());
  }

  async deleteOrg(id: string, at: number): Promise<boolean> {
    return this.mark('orgs', id, at);
  }

  async createProject(p: Project): Promise<void> {
    await this.write(() =>
      this.db
        .prepare('INSERT INTO projects (id, org_id, name, api_enabled, monthly_event_limit, retention_days, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
        .run(p.id, p.orgId, p.name, p.apiEnabled ? 1 : 0, p.monthlyEventLimit, p.retentionDays, p.createdAt),
    );
  }

  async getProject(id: string): Promise<Project | null> {
    const r = this.db
      .prepare('SELECT p.* FROM projects p JOIN orgs o ON o.id = p.org_id WHERE p.id = ? AND p.deleted_at IS NULL AND o.deleted_at IS NULL')
      .get(id) as ProjectRow | undefined;
    return r ? toProject(r) : null;
  }

  async updateProject(id: string, patch: Partial<Pick<Project, 'apiEnabled' | 'monthlyEventLimit' | 'retentionDays'>>): Promise<Project | null> {
    await this.write(() => {
      if (patch.apiEnabled !== undefined) {
        this.db.prepare('UPDATE projects SET api_enabled = ? WHERE id = ?').run(patch.apiEnabled ? 1 : 0, id);
      }
      if (patch.monthlyEventLimit !== undefined) {
        this.db.prepare('UPDATE projects SET monthly_event_limit = ? WHERE id = ?').run(patch.monthlyEventLimit, id);
      }
      if (patch.retentionDays !== undefined) {
        this.db.prepare('UPDATE projects SET retention_days = ? WHERE id = ?').run(patch.retentionDays, id);
      }
    });
    return this.getProject(id);
  }

  async deleteProject(id: string, at: number): Promise<boolean> {
    return this.mark('projects', id, at);
  }

  async createSource(s: Source): Promise<void> {
    await this.write(() =>
      this.db
        .prepare('INSERT INTO sources (id, project_id, name, filter_bots, record_ip, created_at) VALUES (?, ?, ?, ?, ?, ?)')
        .run(s.id, s.projectId, s.name, s.filterBots ? 1 : 0, s.recordIp ? 1 : 0, s.createdAt),
    );
  }

  async getSource(id: string): Promise<Source | null> {
    const r = this.db
      .prepare(
        `SELECT s.* FROM sources s JOIN projects p ON p.id = s.project_id JOIN orgs o ON o.id = p.org_id
         WHERE s.id = ? AND s.deleted_at IS NULL AND p.deleted_at IS NULL AND o.deleted_at IS NULL`,
      )
      .get(id) as SourceRow | undefined;
    return r ? toSource(r) : null;
  }

  async updateSource(id: string, patch: Partial<Pick<Source, 'filterBots' | 'recordIp'>>): Promise<Source | null> {
    await this.write(() => {
      if (patch.filterBots !== undefined) this.db.prepare('UPDATE sources SET filter_bots = ? WHERE id = ?').run(patch.filterBots ? 1 : 0, id);
      if (patch.recordIp !== undefined) this.db.prepare('UPDATE sources SET record_ip = ? WHERE id = ?').run(patch.recordIp ? 1 : 0, id);
    });
    return this.getSource(id);
  }

  async deleteSource(id: string, at: number): Promise<boolean> {
    return this.mark('sources', id, at);
  }

  async addKey(
    key: KeyRecord,
    opts: { fits: (keysOfSource: KeyRecord[]) => boolean; replaces?: { keyId: string; expiresAt: number } },
  ): Promise<'ok' | 'too_many_keys'> {
    const add = this.db.transaction((): 'ok' | 'too_many_keys' => {
      const rows = this.db.prepare('SELECT * FROM api_keys WHERE source_id = ? ORDER BY created_at, id').all(key.sourceId) as KeyRow[];
      if (!opts.fits(rows.map(toKey))) return 'too_many_keys';
      if (opts.replaces) {
        this.db.prepare('UPDATE api_keys SET expires_at = ? WHERE id = ?').run(opts.replaces.expiresAt, opts.replaces.keyId);
      }
      this.db
        .prepare('INSERT INTO api_keys (id, source_id, hash, last_four, created_at) VALUES (?, ?, ?, ?, ?)')
        .run(key.id, key.sourceId, key.hash, key.lastFour, key.createdAt);
      return 'ok';
    });
    return this.write(() => add.immediate());
  }

  async getKey(id: string): Promise<KeyRecord | null> {
    const r = this.db.prepare('SELECT * FROM api_keys WHERE id = ?').get(id) as KeyRow | undefined;
    return r ? toKey(r) : null;
  }

  async listKeys(sourceId: string): Promise<KeyRecord[]> {
    const rows = this.db.prepare('SELECT * FROM api_keys WHERE source_id = ? ORDER BY created_at, id').all(sourceId) as KeyRow[];
    return rows.map(toKey);
  }

  async revokeKey(id: string, at: number): Promise<boolean> {
    return this.write(() => this.db.prepare('UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?').run(at, id).changes > 0);
  }

  private mark(table: 'orgs' | 'projects' | 'sources', id: string, at: number): Promise<boolean> {
    // The table name comes from the fixed union above, never from input.
    return this.write(() => this.db.prepare(`UPDATE ${table} SET deleted_at = ? WHERE id = ? AND deleted_at IS NULL`).run(at, id).changes > 0);
  }
}
