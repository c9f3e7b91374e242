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
  /** The rules of the versions read, by key: what a request takes without waiting. */
  private readonly read = new Map<string, string | null>();

  constructor(private readonly store: PlanStore) {}

  /** The context at once when the version was read already; undefined when it must be read (contextFor). */
  contextNow(plan: AuthPlan): PlanContext | null | undefined {
    if (plan.version === null) return null;
    const key = `${plan.planId}@${plan.version}`;
    const rules = this.read.get(key);
    if (rules === undefined) return undefined;
    return rules === null ? null : { key, rules, unplanned: plan.unplannedEvents };
  }

  /** What the item checks hold a request's items to; null when its source checks no plan, or its plan has no version yet. */
  async contextFor(plan: AuthPlan | null): Promise<PlanContext | null> {
    if (plan === null || plan.version === null) return null;
    const key = `${plan.planId}@${plan.version}`;
    let rules = this.versions.get(key);
    if (rules === undefined) {
      rules = this.store.getVersion(plan.planId, plan.version).then((v) => {
        const text = v?.rules ?? null;
        // A version that is not there yet (pushed on another server after this key was read) is read again next time.
        if (text !== null) this.read.set(key, text);
        return text;
      });
      // A failed read is not kept: the next request reads again.
      rules.catch(() => this.versions.delete(key));
      if (this.versions.size >= KEEP_VERSIONS) {
        const oldest = this.versions.keys().next().value!;
        this.versions.delete(oldest);
        this.read.delete(oldest);
      }
    } else {
      this.versions.delete(key);
    }
    this.versions.set(key, rules);
    const text = await rules;
    if (text === null) this.versions.delete(key);
    return text === null ? null : { key, rules: text, unplanned: plan.unplannedEvents };
  }
}
