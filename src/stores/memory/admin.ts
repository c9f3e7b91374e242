import type { AdminStore, KeyRecord, Org, Project, Source } from '../port.js';
import type { MemoryDatabase, OrgRow, ProjectRow, SourceRow } from './database.js';

const org = ({ id, name, createdAt }: OrgRow): Org => ({ id, name, createdAt });
const project = ({ deletedAt: _, ...p }: ProjectRow): Project => ({ ...p });
const source = ({ deletedAt: _, ...s }: SourceRow): Source => ({ ...s });
const key = (k: KeyRecord): KeyRecord => ({ ...k });

/**
 * Organizations, projects, sources and keys in memory. Deletion is a mark.
 * Every write takes its turn with the transactions (MemoryDatabase.exclusive),
 * which is also how it waits for the project lock.
 */
export class MemoryAdmin implements AdminStore {
  constructor(private readonly db: MemoryDatabase) {}

  private get t() {
    return this.db.tables;
  }

  /** Runs a change to keys or their owners in its turn. */
  private change<T>(fn: () => T): Promise<T> {
    return this.db.exclusive(() => {
      const out = fn();
      this.db.keysVersion++;
      return out;
    });
  }

  createOrg(o: Org): Promise<void> {
    return this.change(() => void this.t.orgs.set(o.id, { ...o, isDefault: false, deletedAt: null }));
  }

  async getOrg(id: string): Promise<Org | null> {
    const o = this.t.orgs.get(id);
    return o !== undefined && o.deletedAt === null ? org(o) : null;
  }

  defaultOrg(make: () => Org): Promise<Org> {
    return this.change(() => {
      for (const o of this.t.orgs.values()) if (o.isDefault && o.deletedAt === null) return org(o);
      const o = make();
      this.t.orgs.set(o.id, { ...o, isDefault: true, deletedAt: null });
      return o;
    });
  }

  deleteOrg(id: string, at: number): Promise<boolean> {
    return this.change(() => mark(this.t.orgs.get(id), at));
  }

  createProject(p: Project): Promise<void> {
    return this.change(() => void this.t.projects.set(p.id, { ...p, deletedAt: null }));
  }

  async getProject(id: string): Promise<Project | null> {
    const p = this.liveProject(id);
    return p === undefined ? null : project(p);
  }

  async updateProject(id: string, patch: Partial<Pick<Project, 'apiEnabled' | 'monthlyEventLimit' | 'retentionDays'>>): Promise<Project | null> {
    await this.change(() => {
      const p = this.t.projects.get(id);
      if (p === undefined) return;
      if (patch.apiEnabled !== undefined) p.apiEnabled = patch.apiEnabled;
      if (patch.monthlyEventLimit !== undefined) p.monthlyEventLimit = patch.monthlyEventLimit;
      if (patch.retentionDays !== undefined) p.retentionDays = patch.retentionDays;
    });
    return this.getProject(id);
  }

  deleteProject(id: string, at: number): Promise<boolean> {
    return this.change(() => mark(this.t.projects.get(id), at));
  }

  createSource(s: Source): Promise<void> {
    return this.change(() => void this.t.sources.set(s.id, { ...s, deletedAt: null }));
  }

  async getSource(id: string): Promise<Source | null> {
    const s = this.t.sources.get(id);
    return s !== undefined && s.deletedAt === null && this.liveProject(s.projectId) !== undefined ? source(s) : null;
  }

  async updateSource(id: string, patch: Partial<Pick<Source, 'filterBots' | 'recordIp'>>): Promise<Source | null> {
    await this.change(() => {
      const s = this.t.sources.get(id);
      if (s === undefined) return;
      if (patch.filterBots !== undefined) s.filterBots = patch.filterBots;
      if (patch.recordIp !== undefined) s.recordIp = patch.recordIp;
    });
    return this.getSource(id);
  }

  deleteSource(id: string, at: number): Promise<boolean> {
    return this.change(() => mark(this.t.sources.get(id), at));
  }

  addKey(
    k: KeyRecord,
    opts: { fits: (keysOfSource: KeyRecord[]) => boolean; replaces?: { keyId: string; expiresAt: number } },
  ): Promise<'ok' | 'too_many_keys'> {
    return this.change(() => {
      if (!opts.fits(this.keysOf(k.sourceId))) return 'too_many_keys';
      const replaced = opts.replaces && this.t.keys.get(opts.replaces.keyId);
      if (replaced) replaced.expiresAt = opts.replaces!.expiresAt;
      this.t.keys.set(k.id, key(k));
      return 'ok';
    });
  }

  async getKey(id: string): Promise<KeyRecord | null> {
    const k = this.t.keys.get(id);
    return k === undefined ? null : key(k);
  }

  async listKeys(sourceId: string): Promise<KeyRecord[]> {
    return this.keysOf(sourceId);
  }

  revokeKey(id: string, at: number): Promise<boolean> {
    return this.change(() => {
      const k = this.t.keys.get(id);
      if (k === undefined) return false;
      k.revokedAt ??= at;
      return true;
    });
  }

  private keysOf(sourceId: string): KeyRecord[] {
    return [...this.t.keys.values()]
      .filter((k) => k.sourceId === sourceId)
      .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map(key);
  }

  private liveProject(id: string): ProjectRow | undefined {
    const p = this.t.projects.get(id);
    return p !== undefined && p.deletedAt === null && this.t.orgs.get(p.orgId)?.deletedAt === null ? p : undefined;
  }
}

function mark(row: { deletedAt: number | null } | undefined, at: number): boolean {
  if (row === undefined || row.deletedAt !== null) return false;
  row.deletedAt = at;
  return true;
}
