/**
 * The `plan` workload: the `big` bodies again, on the same deployment, once
 * every tenant's source enforces a tracking plan of 50 events that every
 * generated item passes (docs/plans.md): what checking a plan costs, against
 * `big` without one in the same run.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Checkout, FreshStore, Log } from './deploy.js';
import { serverEnv } from './deploy.js';
import { runJson } from './processes.js';

/** Events the plan names: the generator's seven, and planned events no body sends. */
export const PLAN_EVENTS = 50;

const money = { type: 'number', minimum: 0 };
const id = (prefix: string) => ({ type: 'string', pattern: `^${prefix}_[A-Za-z0-9_-]+$` });
const oneOf = (...values: string[]) => ({ type: 'string', enum: values });
const count = { type: 'integer', minimum: 0 };

/** The rules, each the schema of the properties the generator (payloads.ts) sends for its event. */
export function benchPlan(): { rules: unknown[] } {
  const track = (event: string, required: string[], properties: Record<string, unknown>) => ({ type: 'track', event, json_schema: { type: 'object', required, properties } });
  const sent = [
    track('invoice_paid', ['invoice_id', 'plan'], { invoice_id: id('inv'), plan: oneOf('free', 'starter', 'pro', 'business'), $revenue: money, $currency: { type: 'string', pattern: '^[A-Z]{3}$' } }),
    track('subscription_renewed', ['plan', 'seats'], { plan: oneOf('free', 'starter', 'pro', 'business'), seats: count, interval: oneOf('month', 'year') }),
    track('export_completed', ['export_id', 'format'], { export_id: id('exp'), format: oneOf('csv', 'json', 'xlsx'), rows: count, duration_ms: count }),
    track('job_finished', ['job', 'status'], { job: { type: 'string' }, status: oneOf('ok', 'retry'), attempt: count, duration_ms: count }),
    track('seat_added', ['seats'], { seats: count, role: oneOf('admin', 'member', 'viewer') }),
    track('api_request', ['endpoint', 'method', 'status'], { endpoint: { type: 'string' }, method: oneOf('GET', 'POST'), status: count, duration_ms: count }),
    track('report_viewed', ['report'], { report: oneOf('revenue', 'churn', 'cohorts'), $current_url: { type: 'string', format: 'uri' } }),
  ];
  const planned = Array.from({ length: PLAN_EVENTS - sent.length }, (_, i) => track(`planned_event_${i}`, ['id'], { id: { type: 'string' }, amount: money, at: { type: 'string', format: 'date-time' } }));
  const identify = {
    type: 'identify',
    json_schema: { type: 'object', properties: { email: { type: 'string', format: 'email' }, plan: oneOf('free', 'starter', 'pro', 'business'), company: { type: 'string' }, seats: count } },
  };
  return { rules: [...sent, ...planned, identify] };
}

/** Every tenant's source made to enforce the bench plan, through the checkout's own commands; seen by its servers on the next request. */
export async function enforceBenchPlan(checkout: Checkout, store: FreshStore, scratch: string, log: Log): Promise<void> {
  const env = serverEnv({ limits: 'off', databaseUrl: store.databaseUrl });
  const file = join(scratch, 'bench-plan.json');
  writeFileSync(file, JSON.stringify(benchPlan()));
  const dd = ['--data-dir', store.dataDir, '--json'];
  const plans = new Map<string, string>();
  for (const t of store.tenants) {
    let planId = plans.get(t.projectId);
    if (planId === undefined) {
      planId = (await runJson<{ id: string }>([checkout.bin, 'plan', 'create', '--project', t.projectId, '--name', 'bench', ...dd], env)).id;
      await runJson([checkout.bin, 'plan', 'push', planId, file, ...dd], env);
      plans.set(t.projectId, planId);
    }
    await runJson([checkout.bin, 'source', 'update', t.sourceId, '--plan', planId, '--plan-mode', 'enforce', ...dd], env);
  }
  log(`  plan: ${store.tenants.length} source(s) enforce a ${PLAN_EVENTS}-event plan`);
}

/** Every tenant's source set to check the bench plan in `mode` (`off` or `enforce`), once enforceBenchPlan has made it. */
export async function setBenchPlanMode(checkout: Checkout, store: FreshStore, mode: 'off' | 'enforce'): Promise<void> {
  const env = serverEnv({ limits: 'off', databaseUrl: store.databaseUrl });
  for (const t of store.tenants) {
    await runJson([checkout.bin, 'source', 'update', t.sourceId, '--plan-mode', mode, '--data-dir', store.dataDir, '--json'], env);
  }
}
