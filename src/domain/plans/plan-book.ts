import type { AuthPlan, PlanStore } from '../../stores/port-plans.js';
import type { PlanContext } from './check.js';

/** Versions' rules a server keeps in memory at once; the least recently used goes first. */
const KEEP_VERSIONS = 256;

/** How often a server asks the store which versions its sources check, to compile new ones before a request meets them. */
export const PLAN_REFRESH_MS = 5000;

/** Compiles a version wherever a request's items may be checked (CheckThreads.prepare); rejects when it does not compile. */
export type PreparePlan = (plan: PlanContext) => Promise<void>;

/**
 * The rules of each plan version a request checks against, read from the
 * store once per server (a version never changes) and kept by version. Which
 * version a source uses, and its mode, come with the request's key
 * (AuthRecord.plan), as fresh as the key itself.
 *
 * Each version read is compiled ahead, where the items will be checked
 * (`prepareWith`), whether a request read it or the refresh did: the refresh
 * reads the versions the sources check (at start-up, then every
 * PLAN_REFRESH_MS), so that a new version is usually compiled on every
 * thread before a request meets it.
 */
export class PlanBook {
  private readonly versions = new Map<string, Promise<string | null>>();
  /** The rules of the versions read, by key: what a request takes without waiting. */
  private readonly read = new Map<string, string | null>();
  /** Each version's compile ahead, by key, once started. */
  private readonly preparing = new Map<string, Promise<void>>();
  private prepare: PreparePlan | null = null;

  constructor(private readonly store: PlanStore) {}

  /** Where the versions read are compiled ahead; none until set (a command compiles as it checks). */
  prepareWith(prepare: PreparePlan): void {
    this.prepare = prepare;
  }

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
        if (text !== null) {
          this.read.set(key, text);
          this.compileAhead({ key, rules: text, unplanned: plan.unplannedEvents });
        }
        return text;
      });
      // A failed read is not kept: the next request reads again.
      rules.catch(() => this.versions.delete(key));
      if (this.versions.size >= KEEP_VERSIONS) {
        const oldest = this.versions.keys().next().value!;
        this.versions.delete(oldest);
        this.read.delete(oldest);
        this.preparing.delete(oldest);
      }
    } else {
      this.versions.delete(key);
    }
    this.versions.set(key, rules);
    const text = await rules;
    if (text === null) this.versions.delete(key);
    return text === null ? null : { key, rules: text, unplanned: plan.unplannedEvents };
  }

  /**
   * Reads which versions the sources check now, and compiles those not yet
   * compiled wherever items are checked; resolves once they are. A version
   * that does not compile is left to the requests that meet it (they fail
   * there, as they would have).
   */
  async refresh(): Promise<void> {
    const inUse = await this.store.versionsInUse();
    await Promise.all(
      inUse.map(async ({ planId, version }) => {
        const context = await this.contextFor({ planId, version, mode: 'enforce', unplannedEvents: 'refuse' });
        if (context !== null) await this.preparing.get(context.key);
      }),
    );
  }

  /**
   * Refreshes now, then every `everyMs` (none at once: a slow store delays
   * the next); `failed` hears of the first refresh that failed after one
   * that did not (a store that is away is reported once, not every pass).
   * Stops with the function it returns.
   */
  startRefresh(everyMs: number, failed: (e: unknown) => void): () => Promise<void> {
    let timer: NodeJS.Timeout | null = null;
    let stopped = false;
    let failing = false;
    let running: Promise<void> = Promise.resolve();
    const pass = () => {
      running = this.refresh()
        .then(() => {
          failing = false;
        }, (e: unknown) => {
          if (!failing) failed(e);
          failing = true;
        })
        .finally(() => {
          if (!stopped) timer = setTimeout(pass, everyMs).unref();
        });
    };
    pass();
    return async () => {
      stopped = true;
      if (timer !== null) clearTimeout(timer);
      await running;
    };
  }

  private compileAhead(plan: PlanContext): void {
    if (this.prepare === null || this.preparing.has(plan.key)) return;
    // A version that does not compile fails the requests that meet it, where they are answered.
    this.preparing.set(plan.key, this.prepare(plan).catch(() => undefined));
  }
}
