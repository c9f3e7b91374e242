import type { AuthPlan, PlanStore } from '../../stores/port-plans.js';
import type { PlanContext } from './check.js';

/** Versions' rules a server keeps in memory at once; the least recently used goes first. */
const KEEP_VERSIONS = 256;

/**
 * The rules of each plan version a request checks against, read from the
 * store once per server (a version never changes) and kept by version. Which
 * version a source uses, and its mode, come with the request's key
 * (AuthRecord.plan), as fresh as the key itself.
 */
export class PlanBook {
  private readonly versions = new Map<string, Promise<string | null>>();

  constructor(private readonly store: PlanStore) {}

  /** What the item checks hold a request's items to; null when its source checks no plan, or its plan has no version yet. */
  async contextFor(plan: AuthPlan | null): Promise<PlanContext | null> {
    if (plan === null || plan.version === null) return null;
    const key = `${plan.planId}@${plan.version}`;
    let rules = this.versions.get(key);
    if (rules === undefined) {
      rules = this.store.getVersion(plan.planId, plan.version).then((v) => v?.rules ?? null);
      // A failed read is not kept: the next request reads again.
      rules.catch(() => this.versions.delete(key));
      if (this.versions.size >= KEEP_VERSIONS) this.versions.delete(this.versions.keys().next().value!);
    } else {
      this.versions.delete(key);
    }
    this.versions.set(key, rules);
    const text = await rules;
    return text === null ? null : { key, rules: text, unplanned: plan.unplannedEvents };
  }
}
