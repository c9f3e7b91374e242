import type { ItemError } from '../items/fields/field-error.js';
import type { ShownItem } from '../items/enriched-item.js';
import { quoted } from '../echo.js';
import type { CompiledPlan, CompiledRule, RuleVersions } from './compile.js';
import type { PlanRule, UnplannedEvents } from './rules.js';

/**
 * A source's plan as a request carries it to the item checks: the version's
 * key ("planId@version"), its rules as stored (JSON text, which crosses to a
 * check thread as cheaply as anything), and what becomes of an event it does
 * not name. Not checkable as it is: compiledPlanFor makes it a ReadyPlan.
 */
export interface PlanContext {
  key: string;
  rules: string;
  unplanned: UnplannedEvents;
}

/**
 * The compiler (ajv and its formats, re2js), loaded the first time a plan is
 * compiled on a thread, never before: loaded up front, its code and tables
 * made a check thread's garbage collector take about four times as long on
 * the batches of a server with no plan (CPU profiles of `npm run bench`'s
 * big: 4.1–4.6 s of a 25 s run against 1.1–1.2 s).
 */
export type PlanCompiler = typeof import('./compile.js');

let loading: Promise<PlanCompiler> | undefined;

function loadCompiler(): Promise<PlanCompiler> {
  loading ??= import('./compile.js');
  return loading;
}

/**
 * A plan version compiled, and what becomes of events it does not name: what
 * the item checks take, synchronously. Making one takes the loaded compiler
 * (a module object, which only an import yields) and a version it compiled,
 * so no path can reach a check with the compiler missing; the request paths
 * get theirs from compiledPlanFor, which loads, compiles and keeps them.
 */
export class ReadyPlan {
  constructor(
    private readonly compiler: PlanCompiler,
    private readonly plan: CompiledPlan,
    readonly unplanned: UnplannedEvents,
  ) {}

  /** The same version, with another choice for unplanned events (itself when it is the same). */
  withUnplanned(unplanned: UnplannedEvents): ReadyPlan {
    return unplanned === this.unplanned ? this : new ReadyPlan(this.compiler, this.plan, unplanned);
  }

  /**
   * Each item that passed its own checks, held to the plan (one fault per item
   * at most). `raws` are the items as sent, by index: where an item names the
   * rule version it was written to (`context.plan_version`).
   */
  checkItems(items: Iterable<ShownItem>, raws: readonly unknown[]): ItemError[] {
    const faults: ItemError[] = [];
    for (const item of items) {
      const fault = this.check(item, askedVersion(raws[item.index]));
      if (fault !== null) faults.push(fault);
    }
    return faults;
  }

  /**
   * One item held to the plan: an `unplanned_event` for a track event the plan
   * does not name (when such are refused), a `plan_violation` for one whose
   * properties (or traits) fail its rule, or that asks for a rule version
   * (`asked`, its `context.plan_version`) the plan does not have. Identify
   * items with no identify rule and group types with no rule pass. Never the
   * value sent.
   */
  check(item: ShownItem, asked: unknown): ItemError | null {
    const { plan } = this;
    switch (item.type) {
      case 'track': {
        const versions = plan.track.get(item.event);
        const what = `Event ${quoted(item.event)}`;
        if (versions !== undefined) return this.held(item.index, versions, asked, item.properties, what);
        if (this.unplanned === 'allow') return null;
        return { index: item.index, code: 'unplanned_event', field: 'event', message: `The tracking plan names no event ${quoted(item.event)}; add a rule for it to the plan, or send one of the events it names.` };
      }
      case 'identify': {
        if (plan.identify === null) return null;
        // The traits an identify sets: its properties, and set_once where properties has no value for the key.
        const traits = item.setOnce === null ? item.properties : { ...item.setOnce, ...item.properties };
        return this.held(item.index, plan.identify, asked, traits, 'The identify');
      }
      case 'group': {
        const versions = plan.group.get(item.groupType);
        return versions === undefined ? null : this.held(item.index, versions, asked, item.properties, `Group type ${quoted(item.groupType)}`);
      }
      case 'alias':
        return null;
    }
  }

  private held(index: number, versions: RuleVersions, asked: unknown, data: Record<string, unknown>, what: string): ItemError | null {
    // An event whose rules name no version has one rule, whatever the item asks: a sender may set one plan_version for all it sends.
    if (asked === undefined || versions.byVersion.size === 0) return this.violation(index, versions.latest, data, what);
    const rule = typeof asked === 'number' ? versions.byVersion.get(asked) : undefined;
    if (rule !== undefined) return this.violation(index, rule, data, what);
    const has = [...versions.byVersion.keys()].sort((a, b) => a - b);
    return {
      index,
      code: 'plan_violation',
      field: 'context.plan_version',
      message: `${what} asks for a rule version the tracking plan does not have (it has version${has.length === 1 ? '' : 's'} ${has.join(', ')}); send one of those as a whole number, or leave context.plan_version out for the highest.`,
    };
  }

  private violation(index: number, rule: CompiledRule, data: Record<string, unknown>, what: string): ItemError | null {
    let valid: boolean;
    try {
      valid = rule.validate(data) as boolean;
    } catch {
      // A rule that cannot be evaluated (a push refuses those it can find): the item is not taken on trust.
      return { index, code: 'plan_violation', field: 'properties', message: `${what} could not be held to its rule in the tracking plan (the rule's schema cannot be evaluated); fix the rule and push the plan again.` };
    }
    if (valid) return null;
    const errors = rule.validate.errors ?? [];
    const first = errors[0];
    return {
      index,
      code: 'plan_violation',
      field: first === undefined ? 'properties' : this.compiler.violationPath('properties', first),
      message: this.compiler.violationMessage('properties', errors, what),
    };
  }
}

/** The rule version an item as sent asks for (`context.plan_version`); undefined when it names none. */
export function askedVersion(raw: unknown): unknown {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const context = (raw as { context?: unknown }).context;
  if (typeof context !== 'object' || context === null) return undefined;
  return (context as { plan_version?: unknown }).plan_version;
}

/** Versions compiled, by key, on this thread: a version never changes, so it is compiled once. */
const compiled = new Map<string, ReadyPlan>();
/** Versions being compiled on this thread, by key: a second ask waits for the same compile. */
const compiling = new Map<string, Promise<ReadyPlan>>();
/** Versions a thread keeps compiled at once; the least recently used goes first. */
export const KEEP_COMPILED = 64;

/** The version, when this thread has compiled it already: at once, without a turn of the event loop; else undefined. */
export function compiledPlanNow(plan: PlanContext): ReadyPlan | undefined {
  const ready = compiled.get(plan.key);
  if (ready === undefined) return undefined;
  // Most recently used last.
  compiled.delete(plan.key);
  compiled.set(plan.key, ready);
  return ready.withUnplanned(plan.unplanned);
}

/**
 * The version compiled on this thread: the compiler loaded if it is not yet,
 * the version compiled (a few rules a turn, so that a thread compiling one
 * still answers other bodies between them) and kept by its key. The one way
 * a request path gets a ReadyPlan. Rejects when the version does not compile
 * (a push refuses such; a version can only fail here if the compiler changed).
 */
export function compiledPlanFor(plan: PlanContext): Promise<ReadyPlan> {
  const now = compiledPlanNow(plan);
  if (now !== undefined) return Promise.resolve(now);
  let pending = compiling.get(plan.key);
  if (pending === undefined) {
    pending = compile(plan).finally(() => compiling.delete(plan.key));
    compiling.set(plan.key, pending);
  }
  return pending.then((ready) => ready.withUnplanned(plan.unplanned));
}

async function compile(plan: PlanContext): Promise<ReadyPlan> {
  const compiler = await loadCompiler();
  const version = await compiler.compilePlanInTurns(JSON.parse(plan.rules) as PlanRule[]);
  const ready = new ReadyPlan(compiler, version, plan.unplanned);
  if (compiled.size >= KEEP_COMPILED) compiled.delete(compiled.keys().next().value!);
  compiled.set(plan.key, ready);
  return ready;
}

/**
 * Whether this thread has the version compiled; if not, its compile starts
 * here in the background (once), so that it is ready for the requests after
 * this one. The main thread asks this of a small body's plan, and sends the
 * body to a check thread meanwhile rather than wait.
 */
export function compiledHere(plan: PlanContext): boolean {
  if (compiled.has(plan.key)) return true;
  // A version that does not compile is asked again where a request needs it, and fails there.
  compiledPlanFor(plan).catch(() => undefined);
  return false;
}

/** The keys of the versions this thread holds compiled (for the threads' warm-up, and its tests). */
export function compiledKeys(): string[] {
  return [...compiled.keys()];
}

/** compiledKeys once the compiles under way on this thread have ended. */
export async function compiledKeysSettled(): Promise<string[]> {
  await Promise.allSettled([...compiling.values()]);
  return compiledKeys();
}

/**
 * A version's rules compiled apart from any cache, for a command that holds
 * items to a plan or a draft once (plan test, plan check). Throws PlanRefused
 * for rules that do not compile.
 */
export async function readyPlanOf(rules: PlanRule[], unplanned: UnplannedEvents): Promise<ReadyPlan> {
  const compiler = await loadCompiler();
  return new ReadyPlan(compiler, compiler.compilePlan(rules), unplanned);
}
