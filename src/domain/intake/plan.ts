/**
 * A source's tracking plan in the intake pipeline (docs/plans.md): its
 * version's rules found before the items are checked (so that a check thread
 * holds them to it, with their own checks), and what the plan found applied
 * once they are: refused in enforce, as any invalid item; kept with a warning
 * in observe, counted and sampled as `warned` when the request is settled.
 * Every intake goes through these steps, as through the others.
 */
import type { ItemError } from '../items/fields/field-error.js';
import type { ShownItem } from '../items/enriched-item.js';
import { sampleText } from '../outcomes/sample-text.js';
import type { PlanContext } from '../plans/check.js';
import type { AuthPlan } from '../../stores/port-plans.js';
import type { CheckedBatch } from './checked.js';
import { previousIdOf, sendable } from './outcome-records.js';
import type { Refusal } from './refusal.js';
import { type IntakeRun, unavailable } from './run.js';

/** A request's plan, as the steps below and the answer read it. */
interface RunPlan {
  context: PlanContext;
  mode: 'observe' | 'enforce';
  /** In observe: the items' warnings, for the answer. */
  warnings: ItemError[];
  /** The faulted items by code and event, for the counts by event ("code\nevent"). */
  byEvent: Map<string, number>;
}

const plans = new WeakMap<IntakeRun, RunPlan>();

/**
 * The plan the request's source checks, if any: its version's rules, read
 * once per server (PlanBook). A request waits only when the version is read
 * for the first time; one whose source checks no plan costs nothing here.
 */
export function findPlan(run: IntakeRun): Refusal | null | Promise<Refusal | null> {
  const plan = run.auth!.plan;
  if (plan === null) return null;
  const now = run.deps.collector.plans.contextNow(plan);
  if (now === undefined) return readPlan(run, plan);
  if (now !== null) plans.set(run, { context: now, mode: plan.mode, warnings: [], byEvent: new Map() });
  return null;
}

async function readPlan(run: IntakeRun, plan: AuthPlan): Promise<Refusal | null> {
  let context: PlanContext | null;
  try {
    context = await run.deps.collector.plans.contextFor(plan);
  } catch (e) {
    return unavailable(run, e);
  }
  if (context !== null) plans.set(run, { context, mode: plan.mode, warnings: [], byEvent: new Map() });
  return null;
}

/** The plan's context for the item checks; none when the source checks no plan. */
export function planContext(run: IntakeRun): PlanContext | undefined {
  return plans.get(run)?.context;
}

/**
 * What the plan found, applied: in enforce each faulted item leaves the items
 * to store for the errors and the refused (the verdict then sees them:
 * strict=true, all_items_invalid); in observe it stays, with a warning.
 */
export function applyPlan(run: IntakeRun): null {
  const plan = plans.get(run);
  const checked = run.checked!;
  const faults = checked.planFaults ?? [];
  if (plan === undefined || faults.length === 0) return null;
  plan.byEvent = faultsByEvent(checked.items, faults);
  if (plan.mode === 'observe') plan.warnings = faults;
  else refuseFaulted(checked, faults);
  return null;
}

/** The faults counted by code and the event of their item ("(identify)", "(group)" for those). */
function faultsByEvent(items: readonly ShownItem[], faults: ItemError[]): Map<string, number> {
  const at = new Map(faults.map((f) => [f.index, f.code]));
  const counts = new Map<string, number>();
  for (const i of items) {
    const code = at.get(i.index);
    if (code === undefined) continue;
    const key = `${code}\n${i.type === 'track' ? i.event : `(${i.type})`}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/**
 * The plan's faulted items of a request that was not a dry run, counted by
 * code and event (warned in observe, refused in enforce), beside the counts
 * by code that every outcome has. `taken`: the request was written (a request
 * refused whole kept none of its warned items).
 */
export function recordPlanEvents(run: IntakeRun, taken: boolean): void {
  const plan = plans.get(run);
  if (plan === undefined || plan.byEvent.size === 0 || run.options.validate) return;
  if (plan.mode === 'observe' && !taken) return;
  const auth = run.auth!;
  const outcome = plan.mode === 'observe' ? 'warned' : 'refused';
  for (const [key, n] of plan.byEvent) {
    const cut = key.indexOf('\n');
    run.deps.collector.outcomes.countEvent(auth.project.id, auth.source.id, run.arrival, outcome, key.slice(0, cut), key.slice(cut + 1), n);
  }
}

/** The answer's `warnings`: present only when the source observes a plan. */
export function warningsOf(run: IntakeRun): { warnings: ItemError[] } | Record<string, never> {
  const plan = plans.get(run);
  return plan?.mode === 'observe' ? { warnings: plan.warnings } : {};
}

function refuseFaulted(checked: CheckedBatch, faults: ItemError[]): void {
  const at = new Map(faults.map((f) => [f.index, f]));
  const named = checked.items
    .filter((i) => at.has(i.index))
    .map((i) => ({
      index: i.index, event: i.event, distinctId: i.distinctId,
      // What an intake answering in its own shape names a refused item by (as the checks' refusals are named).
      ...(i.insertId === null ? {} : { insertId: i.insertId }),
      sample: { text: sampleText(sendable(i)), distinctId: i.distinctId, anonymousId: i.anonymousId, previousId: previousIdOf(i) },
    }));
  checked.items = checked.items.filter((i) => !at.has(i.index));
  checked.errors = [...checked.errors, ...faults].sort((a, b) => a.index - b.index);
  checked.refused = [...checked.refused, ...named].sort((a, b) => a.index - b.index);
}

/**
 * The warned items of a request taken in observe, for what became of every
 * item: counted per code as `warned` and kept as samples, as refusals are. A
 * warned item is also counted as stored (or as a repeat) with the write.
 */
export function recordWarnings(run: IntakeRun): void {
  const plan = plans.get(run);
  if (plan === undefined || plan.warnings.length === 0 || run.options.validate) return;
  const auth = run.auth!;
  const ledger = run.deps.collector.outcomes;
  const items = new Map(run.checked!.items.map((i) => [i.index, i]));
  const counts = new Map<string, number>();
  const samples = [];
  for (const w of plan.warnings) {
    counts.set(w.code, (counts.get(w.code) ?? 0) + 1);
    const item = items.get(w.index);
    if (item === undefined) continue;
    const text = sampleText(sendable(item));
    samples.push({
      outcome: 'warned' as const, code: w.code, codes: [w.code], errors: JSON.stringify([w]), item: text.text, cut: text.cut, index: w.index,
      distinctId: item.distinctId, anonymousId: item.anonymousId, previousId: previousIdOf(item),
    });
  }
  for (const [code, n] of counts) ledger.count(auth.project.id, auth.source.id, run.arrival, 'warned', code, n);
  ledger.record({
    projectId: auth.project.id, sourceId: auth.source.id, requestId: run.request.id, receivedAt: run.arrival,
    counts: { accepted: 0, duplicate: 0, dropped: NONE, refused: NONE }, samples,
  });
  run.facts.warned = counts;
}

const NONE: ReadonlyMap<string, number> = new Map();
