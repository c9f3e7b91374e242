import type { ProjectRetention } from '../port.js';
import type { SqlEngine } from './engine.js';

/** Every project's retention, deleted projects included (their events expire as well). */
export async function projectRetentions(engine: SqlEngine): Promise<ProjectRetention[]> {
  const rows = await engine.db.selectFrom('projects').select(['id', 'retention_days']).orderBy(engine.bytewise('id')).execute();
  return rows.map((r) => ({ projectId: r.id, retentionDays: r.retention_days }));
}
