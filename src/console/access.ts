import { type Viewer, canSee } from '../domain/accounts/accounts.js';
import type { createAdmin } from '../domain/admin.js';
import { isStorableText } from '../domain/storable.js';
import type { KeyRecord, Org, Project, Source, Store } from '../stores/port.js';

/**
 * Every id a console request names is looked up here, and anything of an
 * organization the viewer is not a member of is answered exactly like an id
 * that does not exist (null, then 404): isolation on the server, never by
 * hiding links. An id no engine could hold (U+0000, a lone surrogate: a
 * path or form can carry either) is no id at all, answered the same way
 * before any query, rather than a PostgreSQL error.
 */
export function access(store: Pick<Store, 'admin' | 'listings'>, admin: ReturnType<typeof createAdmin>) {
  async function org(viewer: Viewer, id: string): Promise<Org | null> {
    if (!canSee(viewer, id) || !isStorableText(id)) return null;
    return store.admin.getOrg(id);
  }
  async function project(viewer: Viewer, id: string): Promise<{ project: Project; org: Org } | null> {
    const p = isStorableText(id) ? await store.admin.getProject(id) : null;
    if (p === null) return null;
    const o = await org(viewer, p.orgId);
    if (o === null) return null;
    return { project: p, org: o };
  }
  async function source(viewer: Viewer, id: string): Promise<{ source: Source; project: Project } | null> {
    const s = isStorableText(id) ? await store.admin.getSource(id) : null;
    if (s === null) return null;
    const p = await store.admin.getProject(s.projectId);
    if (p === null || (await org(viewer, p.orgId)) === null) return null;
    return { source: s, project: p };
  }
  async function key(viewer: Viewer, id: string): Promise<{ key: KeyRecord; source: Source; project: Project } | null> {
    const k = isStorableText(id) ? await store.admin.getKey(id) : null;
    if (k === null) return null;
    const s = await source(viewer, k.sourceId);
    return s === null ? null : { key: k, ...s };
  }
  /** The organizations the viewer may see, by name. */
  async function orgs(viewer: Viewer): Promise<Org[]> {
    return (await store.listings.listOrgs()).filter((o) => canSee(viewer, o.id));
  }
  return { org, project, source, key, orgs };
}

export type Access = ReturnType<typeof access>;
