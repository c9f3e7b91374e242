import type { Store } from '../../stores/port.js';
import type { PlanRecord, SourcePlanSetting } from '../../stores/port-plans.js';
import { AdminError } from '../admin.js';
import { newId } from '../ids.js';
import { compilePlan } from './compile.js';
import { PLAN_MODES, type PlanMode, type PlanRule, PlanRefused, type RuleChanges, type UnplannedEvents, diffRules, readRules } from './rules.js';

/** A plan as the commands and the console show it. */
export interface PlanView {
  id: string;
  project_id: string;
  name: string;
  latest_version: number | null;
}

/** A source's plan as `inlet source update` shows it: version null is the latest, unplanned_events as it applies. */
export interface SourcePlanView {
  id: string | null;
  version: number | null;
  mode: PlanMode;
  unplanned_events: UnplannedEvents;
}

const view = (p: PlanRecord): PlanView => ({ id: p.id, project_id: p.projectId, name: p.name, latest_version: p.latestVersion });

/** What `P` or `P@V` names: a plan id, and a pinned version or none (the latest). */
export function parsePlanRef(ref: string): { planId: string; version: number | null } {
  const at = ref.lastIndexOf('@');
  if (at === -1) return { planId: ref, version: null };
  const v = ref.slice(at + 1);
  if (!/^[1-9][0-9]{0,8}$/.test(v)) throw new AdminError(`"${ref}" names no version: write the plan's id, or its id, "@" and a version number (pln_…@3).`);
  return { planId: ref.slice(0, at), version: Number(v) };
}

/** Tracking plans' commands, on a store: each checks what it is given and says what to change. */
export function planAdmin(store: Store, clock: () => number) {
  const plans = store.plans;

  async function plan(id: string): Promise<PlanRecord> {
    const p = await plans.getPlan(id);
    if (p === null) throw new AdminError(`No plan ${id}.`);
    return p;
  }

  async function rulesOf(p: PlanRecord, version: number | undefined): Promise<{ version: number; rules: PlanRule[]; createdAt: number }> {
    const v = version ?? p.latestVersion;
    if (v === null) throw new AdminError(`Plan ${p.id} has no version yet: push one with "inlet plan push ${p.id} FILE".`);
    const found = await plans.getVersion(p.id, v);
    if (found === null) throw new AdminError(`Plan ${p.id} has no version ${v}; its versions are 1 to ${p.latestVersion ?? 0}.`);
    return { version: v, rules: JSON.parse(found.rules) as PlanRule[], createdAt: found.createdAt };
  }

  /** A file's rules, each schema compiled; refused (AdminError) naming the rule and why. */
  function check(file: unknown): PlanRule[] {
    try {
      const rules = readRules(file);
      compilePlan(rules);
      return rules;
    } catch (e) {
      if (e instanceof PlanRefused) throw new AdminError(`The plan was not pushed: ${e.message}`);
      throw e;
    }
  }

  return {
    async create(projectId: string, name: string): Promise<PlanView> {
      if ((await store.admin.getProject(projectId)) === null) throw new AdminError(`No project ${projectId}.`);
      if (name.trim() === '' || name.length > 128) throw new AdminError('A plan name is 1 to 128 characters.', 'name');
      const id = newId('pln');
      if ((await plans.createPlan({ id, projectId, name, createdAt: clock() })) === 'name_taken') {
        throw new AdminError(`Project ${projectId} already has a plan named "${name}".`, 'name');
      }
      return { id, project_id: projectId, name, latest_version: null };
    },

    check,

    /** A new version from a file's rules, once every schema compiles (the refusal names the rule and why). */
    async push(planId: string, file: unknown): Promise<{ id: string; version: number; rules: number; changes: RuleChanges }> {
      const p = await plan(planId);
      const rules = check(file);
      const before = p.latestVersion === null ? [] : (await rulesOf(p, undefined)).rules;
      const version = await plans.pushVersion(p.id, JSON.stringify(rules), clock());
      return { id: p.id, version, rules: rules.length, changes: diffRules(before, rules) };
    },

    async pull(planId: string, version?: number): Promise<{ rules: PlanRule[] }> {
      return { rules: (await rulesOf(await plan(planId), version)).rules };
    },

    async show(planId: string, version?: number) {
      const p = await plan(planId);
      const v = await rulesOf(p, version);
      return { ...view(p), version: v.version, created_at: new Date(v.createdAt).toISOString(), versions: (await plans.listVersions(p.id)).map((x) => x.version), rules: v.rules };
    },

    async list(projectId: string): Promise<(PlanView & { sources: string[] })[]> {
      if ((await store.admin.getProject(projectId)) === null) throw new AdminError(`No project ${projectId}.`);
      return (await plans.listPlans(projectId)).map((p) => ({ ...view(p), sources: p.sources }));
    },

    async diff(planId: string, from: number, to: number): Promise<{ id: string; from: number; to: number } & RuleChanges> {
      const p = await plan(planId);
      const [a, b] = await Promise.all([rulesOf(p, from), rulesOf(p, to)]);
      return { id: p.id, from, to, ...diffRules(a.rules, b.rules) };
    },

    /** Refused while a source uses it: the message names them. */
    async delete(planId: string): Promise<{ id: string; deleted: true }> {
      await plan(planId);
      const r = await plans.deletePlan(planId);
      if (r.usedBy.length > 0) throw new AdminError(`Plan ${planId} is used by source ${r.usedBy.join(', ')}; give each another plan or none ("inlet source update S --no-plan") first.`);
      return { id: planId, deleted: true };
    },

    /** A source's plan changed: the plan (or none), pinned version, mode and unplanned events; what is not given stays. */
    async setSourcePlan(
      sourceId: string,
      change: { plan?: string | null; mode?: string; unplannedEvents?: string },
    ): Promise<SourcePlanView> {
      const source = await store.admin.getSource(sourceId);
      const now = await plans.getSourcePlan(sourceId);
      if (source === null || now === null) throw new AdminError(`No source ${sourceId}.`);
      const next: SourcePlanSetting = { ...now };
      if (change.plan === null) Object.assign(next, { planId: null, version: null, mode: 'off', unplannedEvents: null });
      else if (change.plan !== undefined) {
        const ref = parsePlanRef(change.plan);
        const p = await plan(ref.planId);
        if (p.projectId !== source.projectId) throw new AdminError(`Plan ${p.id} belongs to project ${p.projectId}, not to the source's (${source.projectId}).`);
        if (ref.version !== null && (p.latestVersion === null || ref.version > p.latestVersion)) {
          throw new AdminError(`Plan ${p.id} has no version ${ref.version}; its versions are 1 to ${p.latestVersion ?? 0}.`);
        }
        next.planId = p.id;
        next.version = ref.version;
      }
      if (change.mode !== undefined) {
        if (!(PLAN_MODES as readonly string[]).includes(change.mode)) throw new AdminError(`--plan-mode is off, observe or enforce, not "${change.mode}".`);
        next.mode = change.mode as PlanMode;
      }
      if (change.unplannedEvents !== undefined) {
        if (change.unplannedEvents !== 'allow' && change.unplannedEvents !== 'refuse') throw new AdminError(`--unplanned-events is allow or refuse, not "${change.unplannedEvents}".`);
        next.unplannedEvents = change.unplannedEvents;
      }
      if (next.mode !== 'off' && next.planId === null) throw new AdminError(`Source ${sourceId} has no plan to ${next.mode}: give --plan P as well.`);
      await plans.setSourcePlan(sourceId, next);
      return sourcePlanView(next);
    },

    async sourcePlan(sourceId: string): Promise<SourcePlanView> {
      const s = await plans.getSourcePlan(sourceId);
      if (s === null) throw new AdminError(`No source ${sourceId}.`);
      return sourcePlanView(s);
    },
  };
}

export function sourcePlanView(s: SourcePlanSetting): SourcePlanView {
  return { id: s.planId, version: s.version, mode: s.mode, unplanned_events: s.unplannedEvents ?? (s.mode === 'enforce' ? 'refuse' : 'allow') };
}
