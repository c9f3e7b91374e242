import type { AuthPlan } from '../port-plans.js';

/** A source's plan columns as the key lookups read them, with the plan's highest version then. */
export interface AuthPlanRow {
  plan_id: string | null;
  plan_version: number | null;
  plan_mode: string;
  unplanned_events: string | null;
  plan_latest: number | null;
}

/** The columns each engine's key lookup adds, for a source `s` (the latest version read in the same statement as the key). */
export const AUTH_PLAN_COLUMNS = `s.plan_id, s.plan_version, s.plan_mode, s.unplanned_events,
  (SELECT max(v.version) FROM plan_versions v WHERE v.plan_id = s.plan_id) AS plan_latest`;

/**
 * What a request checks against: none while the mode is off or no plan is
 * chosen; else the pinned version or the latest, and unplanned events as set
 * or as the mode has them by default (refused in enforce, allowed in observe).
 */
export function authPlan(r: AuthPlanRow): AuthPlan | null {
  if (r.plan_id === null || (r.plan_mode !== 'observe' && r.plan_mode !== 'enforce')) return null;
  const version = r.plan_version ?? r.plan_latest;
  const unplannedEvents = r.unplanned_events === 'allow' || r.unplanned_events === 'refuse' ? r.unplanned_events : r.plan_mode === 'enforce' ? 'refuse' : 'allow';
  return { planId: r.plan_id, version: version === null ? null : Number(version), mode: r.plan_mode, unplannedEvents };
}
