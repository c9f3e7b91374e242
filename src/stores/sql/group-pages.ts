import { sql } from 'kysely';
import type { GroupListing, GroupPageQuery } from '../port-console.js';
import type { SqlEngine } from '../port.js';
import type { TunedReads } from './defaults.js';
import { byGroup } from './groups.js';

/**
 * Members counted per group at most: a group of millions would otherwise
 * cost a count of millions on every load of the page. Beyond it the page
 * says "10,000+" and `inlet group show` lists them.
 */
export const MEMBERS_COUNTED = 10_000;

/**
 * A project's group types, in byte order: a project has at most five
 * (docs/api.md), so the page offers them all.
 */
export async function groupTypes(engine: SqlEngine, reads: TunedReads, projectId: string): Promise<string[]> {
  const q = engine.db.selectFrom('group_types').select('group_type').where('project_id', '=', projectId).orderBy(engine.dialect.bytewise('group_type'));
  return (await reads.pageRows(q.compile())).map((r) => r.group_type);
}

/**
 * Up to `limit` groups of the project whose key starts with the prefix, by
 * type then key, each with its traits and its members counted (up to
 * MEMBERS_COUNTED). One range of the groups' key per type (at most five),
 * where page reads run: never on the SQLite connection that writes.
 */
export async function groupPage(engine: SqlEngine, reads: TunedReads, projectId: string, q: GroupPageQuery): Promise<GroupListing[]> {
  const types = q.groupType === null ? await groupTypes(engine, reads, projectId) : [q.groupType];
  const out: GroupListing[] = [];
  for (const type of types) {
    if (out.length >= q.limit) break;
    out.push(...(await ofType(engine, reads, projectId, type, q.keyPrefix, q.limit - out.length)));
  }
  return out;
}

async function ofType(engine: SqlEngine, reads: TunedReads, projectId: string, type: string, prefix: string, limit: number): Promise<GroupListing[]> {
  const { db } = engine;
  const { bytewise, jsonText, startsWith } = engine.dialect;
  const page = db.selectFrom('project_groups as g')
    .select(['g.project_id', 'g.group_type', 'g.group_key', 'g.created_at'])
    .select(sql<number>`(SELECT count(*) FROM (SELECT 1 FROM group_members m WHERE m.project_id = g.project_id AND m.group_type = g.group_type AND m.group_key = g.group_key LIMIT ${MEMBERS_COUNTED + 1}) c)`.as('members'))
    .where('g.project_id', '=', projectId).where('g.group_type', '=', type)
    .$if(prefix !== '', (b) => b.where(startsWith('g.group_key', prefix)))
    .orderBy(bytewise('g.group_key')).limit(limit);
  // The page's groups with their traits, in one query: a row per trait (or one without, for a group with none).
  const query = db.selectFrom(page.as('p'))
    .leftJoin('group_traits as t', (j) => j.onRef('t.project_id', '=', 'p.project_id').onRef('t.group_type', '=', 'p.group_type').onRef('t.group_key', '=', 'p.group_key'))
    .select(['p.group_type', 'p.group_key', 'p.created_at', 'p.members', 't.key', jsonText('t.value').as('value')])
    .orderBy(bytewise('p.group_key')).orderBy(bytewise('t.key'));
  return byGroup(await reads.pageRows(query.compile()), (r, traits): GroupListing => {
    const members = Number(r.members);
    return {
      groupType: r.group_type, groupKey: r.group_key, traits, createdAt: Number(r.created_at),
      members: Math.min(members, MEMBERS_COUNTED), moreMembers: members > MEMBERS_COUNTED,
    };
  });
}
