import type { GroupListQuery, GroupStore, GroupSummary, GroupView, SqlEngine } from '../port.js';

/** The most members a group's view lists. */
export const MAX_MEMBERS_SHOWN = 1000;

/**
 * Rows of groups joined with their traits (one per trait, or one with a null
 * key for a group with none), in group order, as one `make` a group with its traits.
 */
export function byGroup<R extends { group_type: string; group_key: string; key: string | null; value: unknown }, G>(rows: R[], make: (r: R, traits: Record<string, unknown>) => G): G[] {
  const out: G[] = [];
  let entries: [string, unknown][] = [];
  for (const [i, r] of rows.entries()) {
    if (r.key !== null) entries.push([r.key, JSON.parse(r.value as string)]);
    const next = rows[i + 1];
    if (next === undefined || next.group_type !== r.group_type || next.group_key !== r.group_key) {
      // Object.fromEntries keeps a "__proto__" trait as data.
      out.push(make(r, Object.fromEntries(entries)));
      entries = [];
    }
  }
  return out;
}

/** Groups as the CLI reads them, on either SQL engine. */
export class SqlGroups implements GroupStore {
  constructor(private readonly engine: SqlEngine) {}

  async findGroup(projectId: string, groupType: string, groupKey: string): Promise<GroupView | null> {
    const { db, dialect: { bytewise, jsonText } } = this.engine;
    const g = await db.selectFrom('project_groups').select(['group_type', 'group_key', 'created_at'])
      .where('project_id', '=', projectId).where('group_type', '=', groupType).where('group_key', '=', groupKey).executeTakeFirst();
    if (g === undefined) return null;
    const traits = await db.selectFrom('group_traits').select(['key', jsonText('value').as('value')])
      .where('project_id', '=', projectId).where('group_type', '=', groupType).where('group_key', '=', groupKey)
      .orderBy(bytewise('key')).execute();
    const members = await db.selectFrom('group_members').select('person_id')
      .where('project_id', '=', projectId).where('group_type', '=', groupType).where('group_key', '=', groupKey)
      .orderBy(bytewise('person_id')).limit(MAX_MEMBERS_SHOWN).execute();
    return {
      groupType: g.group_type,
      groupKey: g.group_key,
      traits: Object.fromEntries(traits.map((t) => [t.key, JSON.parse(t.value)])),
      createdAt: g.created_at,
      members: members.map((m) => m.person_id),
    };
  }

  async listGroups(projectId: string, q: GroupListQuery): Promise<GroupSummary[]> {
    const { db, dialect: { bytewise, jsonText } } = this.engine;
    let page = db.selectFrom('project_groups').select(['project_id', 'group_type', 'group_key', 'created_at']).where('project_id', '=', projectId);
    if (q.groupType !== undefined) page = page.where('group_type', '=', q.groupType);
    page = page.orderBy(bytewise('group_type')).orderBy(bytewise('group_key')).limit(q.limit);
    // The page's groups with their traits, in one query: a row per trait (or one without, for a group with none).
    const rows = await db.selectFrom(page.as('g'))
      .leftJoin('group_traits as t', (j) => j.onRef('t.project_id', '=', 'g.project_id').onRef('t.group_type', '=', 'g.group_type').onRef('t.group_key', '=', 'g.group_key'))
      .select(['g.group_type', 'g.group_key', 'g.created_at', 't.key', jsonText('t.value').as('value')])
      .orderBy(bytewise('g.group_type')).orderBy(bytewise('g.group_key')).orderBy(bytewise('t.key')).execute();
    return byGroup(rows, (r, traits) => ({ groupType: r.group_type, groupKey: r.group_key, traits, createdAt: r.created_at }));
  }
}
