/**
 * Tracking plans as the store keeps them (docs/plans.md): a plan per project
 * and name, its versions (immutable, numbered from 1, each its rules as JSON
 * text), and each source's choice of plan, version and mode. Read and written
 * off the request path; a request sees its source's choice through its key's
 * lookup (AuthRecord.plan), as fresh as the key itself.
 */
export interface PlanRecord {
  id: string;
  projectId: string;
  name: string;
  createdAt: number;
  /** The highest version pushed; null until the first push. */
  latestVersion: number | null;
}

export interface PlanVersionRecord {
  planId: string;
  version: number;
  /** The version's rules, as JSON text of the array. */
  rules: string;
  createdAt: number;
}

/** A source's plan as stored: the plan, a pinned version (null: the latest), the mode and what becomes of unplanned events (null: the mode's default). */
export interface SourcePlanSetting {
  planId: string | null;
  version: number | null;
  mode: 'off' | 'observe' | 'enforce';
  unplannedEvents: 'allow' | 'refuse' | null;
}

/** What a request learns of its source's plan with its key: the version to check against (pinned or the latest then), or none. */
export interface AuthPlan {
  planId: string;
  /** Null when the plan has no version yet: nothing to check against. */
  version: number | null;
  mode: 'observe' | 'enforce';
  unplannedEvents: 'allow' | 'refuse';
}

export interface PlanStore {
  createPlan(p: { id: string; projectId: string; name: string; createdAt: number }): Promise<'ok' | 'name_taken'>;
  getPlan(id: string): Promise<PlanRecord | null>;
  listPlans(projectId: string): Promise<(PlanRecord & { sources: string[] })[]>;
  /** Adds the next version (the highest plus one, decided in the write's transaction); its number. */
  pushVersion(planId: string, rules: string, at: number): Promise<number>;
  getVersion(planId: string, version: number): Promise<PlanVersionRecord | null>;
  listVersions(planId: string): Promise<{ version: number; createdAt: number }[]>;
  /** Deletes the plan and its versions, unless a live source uses it: then the sources' ids. */
  deletePlan(id: string): Promise<{ deleted: boolean; usedBy: string[] }>;
  getSourcePlan(sourceId: string): Promise<SourcePlanSetting | null>;
  /**
   * The versions live sources check now (mode observe or enforce: the pinned
   * version, or the plan's latest), each once: what a server compiles ahead
   * of the requests held to them.
   */
  versionsInUse(): Promise<{ planId: string; version: number }[]>;
  setSourcePlan(sourceId: string, setting: SourcePlanSetting): Promise<void>;
}
