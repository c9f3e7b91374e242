import { type Html, html } from '../../docs/html.js';
import type { Viewer } from '../../domain/accounts/accounts.js';
import type { PlanView, SourcePlanView } from '../../domain/plans/plan-admin.js';
import type { PlanRule, RuleChanges } from '../../domain/plans/rules.js';
import type { Project } from '../../stores/port.js';
import { OTHER_EVENTS, type StoredSample } from '../../stores/port-outcomes.js';
import { PLAN_EVENTS_PER_HOUR } from '../../domain/outcomes/ledger.js';
import { BASE, csrfField, notice, page, when } from '../layout.js';
import { formatCount } from './numbers.js';

/** The project page's Tracking plans: each plan, its latest version and the sources using it. */
export function plansSection(projectId: string, plans: (PlanView & { sources: string[] })[]): Html {
  return html`<section aria-labelledby="plans-h" id="plans">
<h2 id="plans-h">Tracking plans</h2>
<p class="hint">What each event must look like, checked per item at intake by the sources that use a plan (docs/plans.md). Make one with <code>inlet plan create --project ${projectId} --name NAME</code>, push its rules with <code>inlet plan push</code>; a source uses it from its page.</p>
${plans.length === 0
  ? html`<p class="hint">No tracking plans yet.</p>`
  : html`<div class="scroll"><table class="plans"><thead><tr><th scope="col">Plan</th><th scope="col">Latest version</th><th scope="col">Sources using it</th></tr></thead>
<tbody>${plans.map((p) => html`<tr><td data-label="Plan"><a href="${BASE}/plans/${p.id}">${p.name}</a> <code>${p.id}</code></td><td data-label="Latest version">${p.latest_version === null ? 'none yet' : formatCount(p.latest_version)}</td><td data-label="Sources using it">${formatCount(p.sources.length)}</td></tr>`)}</tbody></table></div>`}
</section>`;
}

/** What the plan page shows: one version's rules, the versions, and a diff when asked. */
export interface PlanPageData {
  plan: PlanView;
  project: Project;
  version: number | null;
  createdAt: string | null;
  versions: number[];
  rules: PlanRule[];
  diff: ({ from: number; to: number } & RuleChanges) | null;
}

const ruleWhat = (r: PlanRule): string => (r.type === 'track' ? r.event : r.type === 'group' ? r.group_type : '—');

/** A plan: a version's rules (type, event or group type, schema), the versions, and a diff between two. */
export function planPage(viewer: Viewer, d: PlanPageData): string {
  const p = d.plan;
  const options = (chosen: number) => d.versions.map((v) => html`<option value="${String(v)}"${v === chosen ? html` selected` : ''}>${formatCount(v)}</option>`);
  return page(
    p.name,
    html`<p class="crumbs"><a href="${BASE}/projects">Projects</a> › <a href="${BASE}/projects/${d.project.id}#plans">${d.project.name}</a></p>
<h1>${p.name}</h1>
<p class="meta">Tracking plan <code>${p.id}</code>${d.version === null ? ' · no version yet' : html` · version ${formatCount(d.version)} of ${formatCount(p.latest_version ?? 0)}, pushed ${d.createdAt ?? ''}`}</p>
${d.versions.length === 0 ? html`<p class="hint">Push its first version with <code>inlet plan push ${p.id} FILE</code>.</p>` : html`
<nav aria-label="Versions"><p>Versions: ${d.versions.map((v) => (v === d.version ? html`<strong>${formatCount(v)}</strong> ` : html`<a href="${BASE}/plans/${p.id}?version=${String(v)}">${formatCount(v)}</a> `))}</p></nav>
<section aria-labelledby="rules-h">
<h2 id="rules-h">Rules</h2>
<div class="scroll"><table class="rules"><thead><tr><th scope="col">Type</th><th scope="col">Event or group type</th><th scope="col">Schema</th></tr></thead>
<tbody>${d.rules.map((r) => html`<tr><td data-label="Type">${r.type}${r.version === undefined ? '' : html` <span class="meta">v${String(r.version)}</span>`}</td><td data-label="Event or group type"><code>${ruleWhat(r)}</code></td><td data-label="Schema"><details><summary>schema</summary><pre>${JSON.stringify(r.json_schema, null, 2)}</pre></details></td></tr>`)}</tbody></table></div>
</section>
<section aria-labelledby="diff-h">
<h2 id="diff-h">Diff</h2>
<form method="get" action="${BASE}/plans/${p.id}" class="card">
  <label for="diff-from">From version</label><select id="diff-from" name="from">${options(d.diff?.from ?? Math.max(1, (d.version ?? 1) - 1))}</select>
  <label for="diff-to">To version</label><select id="diff-to" name="to">${options(d.diff?.to ?? d.version ?? 1)}</select>
  <button type="submit">Compare</button>
</form>
${d.diff === null ? '' : diffList(d.diff)}
</section>`}`,
    viewer,
  );
}

function diffList(d: { from: number; to: number } & RuleChanges): Html {
  const none = d.added.length + d.changed.length + d.removed.length === 0;
  const items = (label: string, keys: string[]) => (keys.length === 0 ? '' : html`<li>${label}: ${keys.map((k, i) => html`${i === 0 ? '' : ', '}<code>${k}</code>`)}</li>`);
  return html`<div id="plan-diff"><p>From version ${formatCount(d.from)} to ${formatCount(d.to)}:${none ? ' no rule changed.' : ''}</p>
${none ? '' : html`<ul>${items('Added', d.added)}${items('Changed', d.changed)}${items('Removed', d.removed)}</ul>`}</div>`;
}

/** One row of Plan violations: an event (or item type) and code, how many in the last 24 hours (every server's), and the newest kept, if any is. */
export interface ViolationRow {
  event: string;
  code: string;
  outcome: string;
  count: number;
  latest: StoredSample | null;
}

/** What the source page's Tracking plan section shows. */
export interface SourcePlanData {
  sourceId: string;
  setting: SourcePlanView;
  plans: PlanView[];
  /** Warned and refused items of the plan's codes, in the last 24 hours, per code (from every server's counts). */
  totals: { code: string; outcome: string; count: number }[];
  violations: ViolationRow[];
  /** The form's refusal, shown beside it. */
  error: string | null;
}

/** The source's plan, mode and unplanned events (a form for an admin), and Plan violations of the last 24 hours. */
export function sourcePlanSection(viewer: Viewer, d: SourcePlanData): Html {
  const s = d.setting;
  const current = s.id === null ? html`none` : html`<a href="${BASE}/plans/${s.id}">${d.plans.find((p) => p.id === s.id)?.name ?? s.id}</a> (${s.version === null ? 'latest version' : html`version ${formatCount(s.version)}`})`;
  const select = (id: string, name: string, values: [string, string][], chosen: string) =>
    html`<select id="${id}" name="${name}">${values.map(([v, label]) => html`<option value="${v}"${v === chosen ? html` selected` : ''}>${label}</option>`)}</select>`;
  const planOptions: [string, string][] = [['', 'none'], ...d.plans.flatMap((p): [string, string][] => [[p.id, `${p.name} (latest)`], ...Array.from({ length: p.latest_version ?? 0 }, (_, i): [string, string] => [`${p.id}@${i + 1}`, `${p.name}, version ${i + 1}`])])];
  const chosenPlan = s.id === null ? '' : s.version === null ? s.id : `${s.id}@${s.version}`;
  return html`<section aria-labelledby="plan-h" id="plan">
<h2 id="plan-h">Tracking plan</h2>
<p class="meta" id="plan-setting">Plan ${current} · mode <strong>${s.mode}</strong> · unplanned events <strong>${s.unplanned_events}</strong></p>
${d.error === null ? '' : notice(d.error, 'error')}
${viewer.user.admin ? html`<form method="post" action="${BASE}/sources/${d.sourceId}/plan" class="card" id="plan-form">
  ${csrfField(viewer)}
  <label for="plan-choice">Plan</label>${select('plan-choice', 'plan', planOptions, chosenPlan)}
  <label for="plan-mode">Mode</label>${select('plan-mode', 'mode', [['off', 'off'], ['observe', 'observe: keep, with a warning'], ['enforce', 'enforce: refuse']], s.mode)}
  <label for="plan-unplanned">Unplanned events</label>${select('plan-unplanned', 'unplanned_events', [['', 'as the mode has it'], ['allow', 'allow'], ['refuse', 'refuse']], '')}
  <button type="submit">Save plan</button>
</form>` : html`<p class="hint">An admin changes it here, or on the server: <code>inlet source update ${d.sourceId} --plan P --plan-mode observe</code>.</p>`}
<h3 id="violations-h">Plan violations</h3>
<p class="hint">Items of the last 24 hours the plan faulted, from every server: warned (kept, in observe) or refused (in enforce). By event and code, with the newest kept item of each (the newest 100 of each code are kept). A source's hour counts up to ${formatCount(PLAN_EVENTS_PER_HOUR)} events by name; the rest of that hour's are under <code>${OTHER_EVENTS}</code>.</p>
${d.totals.length === 0 ? html`<p class="hint">No plan violations in the last 24 hours.</p>` : html`
<p id="violation-totals">${d.totals.map((t) => html`<span><strong>${formatCount(t.count)}</strong> ${t.outcome} <code>${t.code}</code></span> `)}</p>
<div class="scroll"><table class="violations"><thead><tr><th scope="col">Event</th><th scope="col">Code</th><th scope="col">Items</th><th scope="col">Newest</th></tr></thead>
<tbody>${d.violations.map((v) => html`<tr><td data-label="Event"><code>${v.event}</code></td><td data-label="Code"><code>${v.code}</code> <span class="meta">${v.outcome}</span></td><td data-label="Items">${formatCount(v.count)}</td><td data-label="Newest">${v.latest === null ? html`<span class="meta">none kept</span>` : html`<details><summary>${when(v.latest.receivedAt)} · ${firstMessage(v.latest)}</summary><pre>${v.latest.item}</pre></details>`}</td></tr>`)}</tbody></table></div>`}
</section>`;
}

function firstMessage(s: StoredSample): string {
  try {
    const errors = JSON.parse(s.errors) as { field?: string; message?: string }[];
    return errors[0] === undefined ? s.code : `${errors[0].field ?? ''}: ${errors[0].message ?? ''}`;
  } catch {
    return s.code;
  }
}
