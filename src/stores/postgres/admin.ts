import type pg from 'pg';
import type { AdminStore, KeyRecord, Org, Project, Source } from '../port.js';
import { LOCK_NS, inTransaction } from './pool.js';

interface OrgRow { id: string; name: string; created_at: number }
interface ProjectRow { id: string; org_id: string; name: string; api_enabled: boolean; monthly_event_limit: number | null; retention_days: number; created_at: number }
interface SourceRow { id: string; project_id: string; name: string; filter_bots: boolean; record_ip: boolean; created_at: number }
interface KeyRow {
  id: string; source_id: string; hash: Buffer; last_four: string; created_at: number;
  last_used_at: number | null; expires_at: number | null; revoked_at: number | null;
}

/** An organization as the port shows it, from its row. */
export const toOrg = (r: OrgRow): Org => ({ id: r.id, name: r.name, createdAt: r.created_at });
/** A project as the port shows it, from its row. */
export const toProject = (r: ProjectRow): Project => ({
  id: r.id, orgId: r.org_id, name: r.name, apiEnabled: r.api_enabled,
  monthlyEventLimit: r.monthly_event_limit, retentionDays: r.retention_days, createdAt: r.created_at,
});
/** A source as the port shows it, from its row. */
export const toSource = (r: SourceRow): Source => ({
  id: r.id, projectId: r.project_id, name: r.name, filterBots: r.filter_bots,
  recordIp: r.record_ip, createdAt: r.created_at,
});
const toKey = (r: KeyRow): KeyRecord => ({
  id: r.id, sourceId: r.source_id, hash: r.hash, lastFour: r.last_four, createdAt: r.created_at,
  lastUsedAt: r.last_used_at, expiresAt: r.expires_at, revokedAt: r.revoked_at,
});

const SQL = {
  orgById: 'SELECT * FROM orgs WHERE id = $1 AND deleted_at IS NULL',
  defaultOrg: 'SELECT * FROM orgs WHERE is_default AND deleted_at IS NULL',
  projectById: `SELECT p.* FROM projects p JOIN orgs o ON o.id = p.org_id
    WHERE p.id = $1 AND p.deleted_at IS NULL AND o.deleted_at IS NULL`,
  sourceById: `SELECT s.* FROM sources s JOIN projects p ON p.id = s.project_id JOIN orgs o ON o.id = p.org_id
    WHERE s.id = $1 AND s.deleted_at IS NULL AND p.deleted_at IS NULL AND o.deleted_at IS NULL`,
  // The projects whose writers a change takes the lock of (see lockedChange), by the row changed.
  projectsOf: {
    orgs: 'SELECT id FROM projects WHERE org_id = $1 ORDER BY id',
    projects: 'SELECT id FROM projects WHERE id = $1',
    sources: 'SELECT project_id AS id FROM sources WHERE id = $1',
    api_keys: 'SELECT s.project_id AS id FROM api_keys k JOIN sources s ON s.id = k.source_id WHERE k.id = $1',
  },
  lockProject: 'SELECT pg_advisory_xact_lock($1::int, hashtext($2::text))',
  revoke: 'UPDATE api_keys SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1',
  // The table name comes from a fixed list, never from input.
  mark: {
    orgs: 'UPDATE orgs SET deleted_at = $2 WHERE id = $1 AND deleted_at IS NULL',
    projects: 'UPDATE projects SET deleted_at = $2 WHERE id = $1 AND deleted_at IS NULL',
    sources: 'UPDATE sources SET deleted_at = $2 WHERE id = $1 AND deleted_at IS NULL',
  },
} as const;

/** Organizations, projects, sources and keys on PostgreSQL. Deletion is a mark, so history stays readable. */
export class PgAdmin implements AdminStore {
  constructor(private readonly pool: pg.Pool) {}

  async createOrg(o: Org): Promise<void> {
    await this.pool.query('INSERT INTO orgs (id, name, created_at) VALUES ($1, $2, $3)', [o.id, o.name, o.createdAt]);
  }

  async getOrg(id: string): Promise<Org | null> {
    return this.one(SQL.orgById, [id], toOrg);
  }

  async defaultOrg(make: () => Org): Promise<Org> {
    const found = await this.one(SQL.defaultOrg, [], toOrg);
    if (found !== null) return found;
    const o = make();
    // The unique index on the live default lets one of two racing callers in;
    // the other reads what the winner wrote.
    const inserted = await this.pool.query(
      'INSERT INTO orgs (id, name, is_default, created_at) VALUES ($1, $2, true, $3) ON CONFLICT DO NOTHING',
      [o.id, o.name, o.createdAt],
    );
    if (inserted.rowCount === 1) return o;
    return (await this.one(SQL.defaultOrg, [], toOrg))!;
  }

  async deleteOrg(id: string, at: number): Promise<boolean> {
    return this.mark('orgs', id, at);
  }

  async createProject(p: Project): Promise<void> {
    await this.pool.query(
      'INSERT INTO projects (id, org_id, name, api_enabled, monthly_event_limit, retention_days, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)',
      [p.id, p.orgId, p.name, p.apiEnabled, p.monthlyEventLimit, p.retentionDays, p.createdAt],
    );
  }

  async getProject(id: string): Promise<Project | null> {
    return this.one(SQL.projectById, [id], toProject);
  }

  async updateProject(id: string, patch: Partial<Pick<Project, 'apiEnabled' | 'monthlyEventLimit' | 'retentionDays'>>): Promise<Project | null> {
    // null is a value for the limit (no limit), so "not given" travels as its own flag.
    await this.pool.query(
      `UPDATE projects SET api_enabled = coalesce($2::boolean, api_enabled),
         monthly_event_limit = CASE WHEN $3::boolean THEN $4::bigint ELSE monthly_event_limit END,
         retention_days = coalesce($5::integer, retention_days)
       WHERE id = $1`,
      [id, patch.apiEnabled ?? null, patch.monthlyEventLimit !== undefined, patch.monthlyEventLimit ?? null, patch.retentionDays ?? null],
    );
    return this.getProject(id);
  }

  async deleteProject(id: string, at: number): Promise<boolean> {
    return this.mark('projects', id, at);
  }

  async createSource(s: Source): Promise<void> {
    await this.pool.query(
      'INSERT INTO sources (id, project_id, name, filter_bots, record_ip, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
      [s.id, s.projectId, s.name, s.filterBots, s.recordIp, s.createdAt],
    );
  }

  async getSource(id: string): Promise<Source | null> {
    return this.one(SQL.sourceById, [id], toSource);
  }

  async updateSource(id: string, patch: Partial<Pick<Source, 'filterBots' | 'recordIp'>>): Promise<Source | null> {
    await this.pool.query(
      'UPDATE sources SET filter_bots = coalesce($2::boolean, filter_bots), record_ip = coalesce($3::boolean, record_ip) WHERE id = $1',
      [id, patch.filterBots ?? null, patch.recordIp ?? null],
    );
    return this.getSource(id);
  }

  async deleteSource(id: string, at: number): Promise<boolean> {
    return this.mark('sources', id, at);
  }

  async addKey(
    key: KeyRecord,
    opts: { fits: (keysOfSource: KeyRecord[]) => boolean; replaces?: { keyId: string; expiresAt: number } },
  ): Promise<'ok' | 'too_many_keys'> {
    return inTransaction(this.pool, async (c): Promise<'ok' | 'too_many_keys'> => {
      // Locking the source row makes two key changes of one source take turns
      // on every server; the count below then sees the other's commit.
      await c.query('SELECT 1 FROM sources WHERE id = $1 FOR UPDATE', [key.sourceId]);
      const { rows } = await c.query<KeyRow>('SELECT * FROM api_keys WHERE source_id = $1 ORDER BY created_at, id COLLATE "C"', [key.sourceId]);
      if (!opts.fits(rows.map(toKey))) return 'too_many_keys';
      if (opts.replaces) {
        await c.query('UPDATE api_keys SET expires_at = $1 WHERE id = $2', [opts.replaces.expiresAt, opts.replaces.keyId]);
      }
      await c.query(
        'INSERT INTO api_keys (id, source_id, hash, last_four, created_at) VALUES ($1, $2, $3, $4, $5)',
        [key.id, key.sourceId, key.hash, key.lastFour, key.createdAt],
      );
      return 'ok';
    });
  }

  async getKey(id: string): Promise<KeyRecord | null> {
    return this.one('SELECT * FROM api_keys WHERE id = $1', [id], toKey);
  }

  async listKeys(sourceId: string): Promise<KeyRecord[]> {
    const { rows } = await this.pool.query<KeyRow>('SELECT * FROM api_keys WHERE source_id = $1 ORDER BY created_at, id COLLATE "C"', [sourceId]);
    return rows.map(toKey);
  }

  async revokeKey(id: string, at: number): Promise<boolean> {
    return this.lockedChange('api_keys', SQL.revoke, id, at);
  }

  private mark(table: keyof typeof SQL.mark, id: string, at: number): Promise<boolean> {
    return this.lockedChange(table, SQL.mark[table], id, at);
  }

  /**
   * A change that takes keys out of service, made under the lock of every
   * project it touches (in id order, so two such changes never deadlock): a
   * write that checked its key under the lock has committed by then, and any
   * later one sees the change.
   */
  private lockedChange(table: keyof typeof SQL.projectsOf, update: string, id: string, at: number): Promise<boolean> {
    return inTransaction(this.pool, async (c) => {
      const { rows } = await c.query<{ id: string }>(SQL.projectsOf[table], [id]);
      for (const p of rows) await c.query(SQL.lockProject, [LOCK_NS.project, p.id]);
      const r = await c.query(update, [id, at]);
      return (r.rowCount ?? 0) > 0;
    });
  }

  private async one<R extends pg.QueryResultRow, T>(text: string, values: unknown[], map: (r: R) => T): Promise<T | null> {
    const { rows } = await this.pool.query<R>(text, values);
    return rows[0] === undefined ? null : map(rows[0]);
  }
}
