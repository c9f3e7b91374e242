import { sql } from 'kysely';
import type { PlanRecord, PlanStore, PlanVersionRecord, SourcePlanSetting } from '../port-plans.js';
import { SqlStorePart } from './engine.js';

/** A push that met another at the same version number tries again this many times. */
const PUSH_TRIES = 3;

/**
 * Tracking plans on either SQL engine, off the request path. Every write goes
 * through the engine's turn, so a change counts as a key change: the next
 * key lookup on any server sees a source's new plan, and a new latest version.
 */
export class SqlPlans extends SqlStorePart implements PlanStore {
  async createPlan(p: { id: string; projectId: string; name: string; createdAt: number }): Promise<'ok' | 'name_taken'> {
    return this.write(async () => {
      const r = await this.db.insertInto('plans').values({ id: p.id, project_id: p.projectId, name: p.name, created_at: p.createdAt })
        .onConflict((c) => c.columns(['project_id', 'name']).doNothing()).executeTakeFirst();
      return r.numInsertedOrUpdatedRows === 1n ? 'ok' : 'name_taken';
    });
  }

  async getPlan(id: string): Promise<PlanRecord | null> {
    const r = await this.plans().where('p.id', '=', id).executeTakeFirst();
    return r === undefined ? null : toPlan(r);
  }

  async listPlans(projectId: string): Promise<(PlanRecord & { sources: string[] })[]> {
    const rows = await this.plans().where('p.project_id', '=', projectId).orderBy('p.name').execute();
    if (rows.length === 0) return [];
    const users = await this.db.selectFrom('sources').select(['id', 'plan_id']).where('plan_id', 'in', rows.map((r) => r.id))
      .where('deleted_at', 'is', null).orderBy('id').execute();
    return rows.map((r) => ({ ...toPlan(r), sources: users.filter((u) => u.plan_id === r.id).map((u) => u.id) }));
  }

  async pushVersion(planId: string, rules: string, at: number): Promise<number> {
    for (let tries = 1; ; tries++) {
      try {
        return await this.write(async () => {
          const r = await this.db.insertInto('plan_versions')
            .columns(['plan_id', 'version', 'rules', 'created_at'])
            .expression((eb) => eb.selectFrom('plan_versions')
              .select([eb.val(planId).as('plan_id'), sql<number>`coalesce(max(version), 0) + 1`.as('version'), eb.val(rules).as('rules'), eb.val(at).as('created_at')])
              .where('plan_id', '=', planId))
            .returning('version').executeTakeFirstOrThrow();
          return Number(r.version);
        });
      } catch (e) {
        // Two pushes at once read the same highest version; the one that lost takes the next.
        if (tries >= PUSH_TRIES) throw e;
      }
    }
  }

  async getVersion(planId: string, version: number): Promise<PlanVersionRecord | null> {
    const r = await this.db.selectFrom('plan_versions').selectAll().where('plan_id', '=', planId).where('version', '=', version).executeTakeFirst();
    return r === undefined ? null : { planId: r.plan_id, version: Number(r.version), rules: r.rules, createdAt: Number(r.created_at) };
  }

  async listVersions(planId: string): Promise<{ version: number; createdAt: number }[]> {
    const rows = await this.db.selectFrom('plan_versions').select(['version', 'created_at']).where('plan_id', '=', planId).orderBy('version').execute();
    return rows.map((r) => ({ version: Number(r.version), createdAt: Number(r.created_at) }));
  }

  async deletePlan(id: string): Promise<{ deleted: boolean; usedBy: string[] }> {
    return this.write(() => this.db.transaction().execute(async (trx) => {
      const users = await trx.selectFrom('sources').select('id').where('plan_id', '=', id).where('deleted_at', 'is', null).orderBy('id').execute();
      if (users.length > 0) return { deleted: false, usedBy: users.map((u) => u.id) };
      await trx.deleteFrom('plan_versions').where('plan_id', '=', id).execute();
      const r = await trx.deleteFrom('plans').where('id', '=', id).executeTakeFirst();
      return { deleted: r.numDeletedRows === 1n, usedBy: [] };
    }));
  }

  async getSourcePlan(sourceId: string): Promise<SourcePlanSetting | null> {
    const r = await this.db.selectFrom('sources').select(['plan_id', 'plan_version', 'plan_mode', 'unplanned_events'])
      .where('id', '=', sourceId).where('deleted_at', 'is', null).executeTakeFirst();
    if (r === undefined) return null;
    return {
      planId: r.plan_id,
      version: r.plan_version === null ? null : Number(r.plan_version),
      mode: r.plan_mode as SourcePlanSetting['mode'],
      unplannedEvents: r.unplanned_events as SourcePlanSetting['unplannedEvents'],
    };
  }

  async versionsInUse(): Promise<{ planId: string; version: number }[]> {
    const rows = await this.db.selectFrom('sources as s')
      .select('s.plan_id')
      .select((eb) => eb.fn.coalesce('s.plan_version', eb.selectFrom('plan_versions as v').select(sql<number>`max(v.version)`.as('m')).whereRef('v.plan_id', '=', 's.plan_id')).as('version'))
      .where('s.deleted_at', 'is', null).where('s.plan_id', 'is not', null).where('s.plan_mode', 'in', ['observe', 'enforce'])
      .distinct().execute();
    return rows.flatMap((r) => (r.plan_id === null || r.version === null ? [] : [{ planId: r.plan_id, version: Number(r.version) }]));
  }

  async setSourcePlan(sourceId: string, s: SourcePlanSetting): Promise<void> {
    await this.write(() => this.db.updateTable('sources')
      .set({ plan_id: s.planId, plan_version: s.version, plan_mode: s.mode, unplanned_events: s.unplannedEvents })
      .where('id', '=', sourceId).execute());
  }

  private plans() {
    return this.db.selectFrom('plans as p')
      .select(['p.id', 'p.project_id', 'p.name', 'p.created_at'])
      .select((eb) => eb.selectFrom('plan_versions as v').select(sql<number | null>`max(v.version)`.as('m')).whereRef('v.plan_id', '=', 'p.id').as('latest'));
  }
}

function toPlan(r: { id: string; project_id: string; name: string; created_at: number; latest: number | null }): PlanRecord {
  return { id: r.id, projectId: r.project_id, name: r.name, createdAt: Number(r.created_at), latestVersion: r.latest === null ? null : Number(r.latest) };
}
