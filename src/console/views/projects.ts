import { type Html, html } from '../../docs/html.js';
import type { Viewer } from '../../domain/accounts/accounts.js';
import type { Org, Project, Source } from '../../stores/port.js';
import { BASE, csrfField, notice, page } from '../layout.js';
import { type DestinationsData, destinationsSection } from './destinations.js';
import { formatCount } from './numbers.js';
import { type Typed, checkedOf, fieldError, formError, invalidAttrs, valueOf } from './typed.js';

const yesNo = (b: boolean): string => (b ? 'on' : 'off');

/**
 * A button that shows the form it controls (console.js); without script the
 * form is simply shown. A form that came back with an error stays open.
 */
function opener(label: string, formId: string, open = false): Html {
  return html`<button type="button" class="opener" aria-controls="${formId}" aria-expanded="true"${open ? html` data-open` : ''}>${label}</button>`;
}

/** The share of a project's items refused in the last 24 hours, as the list shows it. */
function refusedShare(share: number | null): string {
  if (share === null) return 'no items in the last 24 h';
  const pct = share * 100;
  // A few refused among many must not read as none.
  const shown = share === 0 ? '0' : pct < 0.1 ? '<0.1' : pct < 10 ? pct.toFixed(1) : pct.toFixed(0);
  return `${shown}% of items refused in the last 24 h`;
}

/** A project's metered events this month, as the list shows them (`inlet usage`). */
function eventsThisMonth(n: number): string {
  return `${formatCount(n)} ${n === 1 ? 'event' : 'events'} this month`;
}

/** The projects the viewer may see, by organization, and the New project form (`typed` when it failed validation). */
export function projectsPage(viewer: Viewer, orgs: Org[], projects: Project[], refusedShares: Map<string, number | null>, used: Map<string, number>, typed: Typed | null): string {
  const byOrg = orgs.map((o) => {
    const mine = projects.filter((p) => p.orgId === o.id);
    return html`<section aria-labelledby="org-${o.id}">
<h2 id="org-${o.id}">${o.name}</h2>
${mine.length === 0 ? html`<p class="hint">No projects yet.</p>` : html`<ul class="list">${mine.map((p) => html`<li><a href="${BASE}/projects/${p.id}">${p.name}</a> <span class="meta">batch API ${yesNo(p.apiEnabled)} · ${eventsThisMonth(used.get(p.id) ?? 0)} · ${refusedShare(refusedShares.get(p.id) ?? null)}</span></li>`)}</ul>`}
</section>`;
  });
  const orgChoice =
    orgs.length > 1
      ? html`<label for="org">Organization</label><select id="org" name="org"${invalidAttrs(typed, 'orgId', 'org')}>${orgs.map((o) => html`<option value="${o.id}"${valueOf(typed, 'org', '') === o.id ? html` selected` : ''}>${o.name}</option>`)}</select>${fieldError(typed, 'orgId', 'org')}`
      : orgs.length === 1
        ? html`<input type="hidden" name="org" value="${orgs[0]!.id}">`
        : html``;
  const canCreate = orgs.length > 0 || viewer.orgIds === null;
  return page(
    'Projects',
    html`<h1>Projects</h1>
${canCreate ? opener('New project', 'new-project', typed !== null) : notice('Your account is not a member of any organization yet; ask an admin to add you.')}
${canCreate
  ? html`<form id="new-project" method="post" action="${BASE}/projects" class="card collapsible">
  ${csrfField(viewer)}
  ${formError(typed, orgs.length > 1 ? ['name', 'orgId'] : ['name'])}
  <label for="project-name">Name</label>
  <input id="project-name" name="name" required maxlength="200" value="${valueOf(typed, 'name', '')}"${invalidAttrs(typed, 'name', 'project-name')}>
  ${fieldError(typed, 'name', 'project-name')}
  ${orgChoice}
  <div class="check"><input id="api-enabled" name="api_enabled" type="checkbox" value="true"${checkedOf(typed, 'api_enabled', false)}><label for="api-enabled">Batch API enabled</label></div>
  <button type="submit">Create</button>
</form>`
  : ''}
${byOrg}`,
    viewer,
  );
}

/** What the project page shows. */
export interface ProjectPageData {
  project: Project;
  org: Org;
  sources: Source[];
  month: string;
  used: number;
  chart: Html;
  /** The New source form, when it failed validation. */
  newSource: Typed | null;
  /** The settings form, when it failed validation. */
  settings: Typed | null;
  saved: boolean;
  destinations: DestinationsData;
  /** The Tracking plans section (views/plans.ts). */
  plans?: Html;
}

/** A project: its sources, usage and chart, settings. */
export function projectPage(viewer: Viewer, d: ProjectPageData): string {
  const p = d.project;
  const limit = p.monthlyEventLimit;
  const ns = d.newSource;
  const st = d.settings;
  return page(
    p.name,
    html`<p class="crumbs"><a href="${BASE}/projects">Projects</a> › ${d.org.name}</p>
<h1>${p.name}</h1>
<p class="meta">Project <code>${p.id}</code> · <a href="${BASE}/projects/${p.id}/people">People</a> · <a href="${BASE}/projects/${p.id}/groups">Groups</a></p>
${d.saved ? notice('Settings saved.') : ''}
<section aria-labelledby="sources-h">
<h2 id="sources-h">Sources</h2>
${d.sources.length === 0 ? html`<p class="hint">No sources yet.</p>` : html`<ul class="list">${d.sources.map((s) => html`<li><a href="${BASE}/sources/${s.id}">${s.name}</a> <span class="meta">bot filter ${yesNo(s.filterBots)}, IP recording ${yesNo(s.recordIp)}</span></li>`)}</ul>`}
${opener('New source', 'new-source', ns !== null)}
<form id="new-source" method="post" action="${BASE}/projects/${p.id}/sources" class="card collapsible">
  ${csrfField(viewer)}
  ${formError(ns, ['name'])}
  <label for="source-name">Name</label>
  <input id="source-name" name="name" required maxlength="200" value="${valueOf(ns, 'name', '')}"${invalidAttrs(ns, 'name', 'source-name')}>
  ${fieldError(ns, 'name', 'source-name')}
  <div class="check"><input id="filter-bots" name="filter_bots" type="checkbox" value="true"${checkedOf(ns, 'filter_bots', true)}><label for="filter-bots">Filter bots</label></div>
  <div class="check"><input id="record-ip" name="record_ip" type="checkbox" value="true"${checkedOf(ns, 'record_ip', false)}><label for="record-ip">Record IP addresses</label></div>
  <button type="submit">Create</button>
</form>
</section>
${d.plans ?? ''}
${destinationsSection(viewer, d.destinations, opener)}
<section aria-labelledby="usage-h">
<h2 id="usage-h">Usage</h2>
<p class="usage"><strong>${formatCount(d.used)}</strong> ${d.used === 1 ? 'event' : 'events'} this month (${d.month}, UTC)${limit === null ? '; no plan limit' : html` of a plan limit of <strong>${formatCount(limit)}</strong>`}.</p>
<p class="hint">Events: stored track events, each counted once, as <code>inlet usage --project ${p.id}</code> counts them against the limit. The chart below counts items.</p>
${limit === null ? '' : html`<meter min="0" max="${limit}" value="${Math.min(d.used, limit)}" aria-label="Usage this month">${formatCount(d.used)} of ${formatCount(limit)}</meter>`}
${d.chart}
</section>
<section aria-labelledby="settings-h">
<h2 id="settings-h">Settings</h2>
<form id="settings" method="post" action="${BASE}/projects/${p.id}/settings" class="card">
  ${csrfField(viewer)}
  ${formError(st, ['monthlyEventLimit', 'retentionDays'])}
  <div class="check"><input id="settings-api" name="api_enabled" type="checkbox" value="true"${checkedOf(st, 'api_enabled', p.apiEnabled)}><label for="settings-api">API enabled</label></div>
  <label for="settings-limit">Monthly event limit</label>
  <input id="settings-limit" name="monthly_event_limit" inputmode="numeric" value="${valueOf(st, 'monthly_event_limit', limit === null ? '' : String(limit))}"${invalidAttrs(st, 'monthlyEventLimit', 'settings-limit', 'limit-hint')}>
  ${fieldError(st, 'monthlyEventLimit', 'settings-limit')}
  <p id="limit-hint" class="hint">Empty: no limit.</p>
  <label for="settings-retention">Retention days</label>
  <input id="settings-retention" name="retention_days" inputmode="numeric" required value="${valueOf(st, 'retention_days', String(p.retentionDays))}"${invalidAttrs(st, 'retentionDays', 'settings-retention')}>
  ${fieldError(st, 'retentionDays', 'settings-retention')}
  <button type="submit">Save</button>
</form>
</section>`,
    viewer,
  );
}
