import type { ItemError } from '../items/fields/field-error.js';
import type { ShownItem } from '../items/enriched-item.js';
import { quoted } from '../echo.js';
import type { CompiledPlan, CompiledRule } from './compile.js';
import type { PlanRule, UnplannedEvents } from './rules.js';

/**
 * A source's plan as the item checks are given it: the version's key
 * ("planId@version"), its rules as stored (JSON text, which crosses to a check
 * thread as cheaply as anything), and what becomes of an event it does not name.
 */
export interface PlanContext {
  key: string;
  rules: string;
  unplanned: UnplannedEvents;
}

/**
 * The compiler (ajv and its formats, re2js), loaded the first time a plan is
 * checked on a thread, never before: loaded up front, its code and tables
 * made a check thread's garbage collector take about four times as long on
 * the batches of a server with no plan (CPU profiles of `npm run bench`'s
 * big: 4.1–4.6 s of a 25 s run against 1.1–1.2 s).
 */
let compiler: typeof import('./compile.js') | undefined;
let loading: Promise<void> | undefined;

/** Loads the compiler once; every path that checks a plan awaits it first (checkPlanItems throws without it). */
export function loadPlanCompiler(): Promise<void> {
  loading ??= import('./compile.js').then((m) => {
    compiler = m;
  });
  return loading;
}

function loaded(): typeof import('./compile.js') {
  if (compiler === undefined) throw new Error('The tracking plan compiler is not loaded: await loadPlanCompiler() before checking a plan.');
  return compiler;
}

/** Versions compiled, by key, on each thread: a version never changes, so it is compiled once. */
const compiled = new Map<string, CompiledPlan>();
/** Versions a thread keeps compiled at once; the least recently used goes first. */
const KEEP_COMPILED = 64;

/** The version compiled, from this thread's cache. */
export function compiledPlan(plan: PlanContext): CompiledPlan {
  let c = compiled.get(plan.key);
  if (c !== undefined) {
    // Most recently used last.
    compiled.delete(plan.key);
    compiled.set(plan.key, c);
    return c;
  }
  c = loaded().compilePlan(JSON.parse(plan.rules) as PlanRule[]);
  if (compiled.size >= KEEP_COMPILED) compiled.delete(compiled.keys().next().value!);
  compiled.set(plan.key, c);
  return c;
}

/**
 * Whether this thread has the version compiled; if not, it is compiled here
 * soon, after the current turn, so that a request never waits on it where
 * it is asked (the main thread sends that request to a check thread, which
 * compiles its own, meanwhile). A version is compiled once per thread.
 */
export function compiledHere(plan: PlanContext): boolean {
  if (compiled.has(plan.key)) return true;
  if (!soon.has(plan.key)) {
    soon.add(plan.key);
    const compile = () => {
      soon.delete(plan.key);
      try {
        compiledPlan(plan);
      } catch {
        // A version that cannot be compiled faults each item it checks (checkPlanItems), where it is asked.
      }
    };
    loadPlanCompiler().then(() => setImmediate(compile), () => soon.delete(plan.key));
  }
  return false;
}

/** Versions whose compiling is due after the current turn. */
const soon = new Set<string>();

/**
 * Each item that passed its own checks, held to the plan: an `unplanned_event`
 * for a track event the plan does not name (when such are refused), a
 * `plan_violation` for one whose properties (or traits) fail its rule. Identify
 * items with no identify rule and group types with no rule pass. One fault
 * per item at most; never the value sent.
 */
export function checkPlanItems(items: Iterable<ShownItem>, plan: PlanContext): ItemError[] {
  const c = compiledPlan(plan);
  const faults: ItemError[] = [];
  for (const item of items) {
    const fault = checkPlanItem(item, c, plan.unplanned);
    if (fault !== null) faults.push(fault);
  }
  return faults;
}

export function checkPlanItem(item: ShownItem, plan: CompiledPlan, unplanned: UnplannedEvents): ItemError | null {
  switch (item.type) {
    case 'track': {
      const rule = plan.track.get(item.event);
      if (rule !== undefined) return violation(item.index, rule, item.properties, `Event ${quoted(item.event)}`);
      if (unplanned === 'allow') return null;
      return { index: item.index, code: 'unplanned_event', field: 'event', message: `The tracking plan names no event ${quoted(item.event)}; add a rule for it to the plan, or send one of the events it names.` };
    }
    case 'identify': {
      if (plan.identify === null) return null;
      // The traits an identify sets: its properties, and set_once where properties has no value for the key.
      const traits = item.setOnce === null ? item.properties : { ...item.setOnce, ...item.properties };
      return violation(item.index, plan.identify, traits, 'The identify');
    }
    case 'group': {
      const rule = plan.group.get(item.groupType);
      return rule === undefined ? null : violation(item.index, rule, item.properties, `Group type ${quoted(item.groupType)}`);
    }
    case 'alias':
      return null;
  }
}

function violation(index: number, rule: CompiledRule, data: Record<string, unknown>, what: string): ItemError | null {
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
    field: first === undefined ? 'properties' : loaded().violationPath('properties', first),
    message: loaded().violationMessage('properties', errors, what),
  };
}
