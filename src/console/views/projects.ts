import { type Html, html } from '../../docs/html.js';
import type { Viewer } from '../../domain/accounts/accounts.js';
import type { Org, Project, Source } from '../../stores/port.js';
import { BASE, csrfField, notice, page } from '../layout.js';

const yesNo = (b: boolean): string => (b ? 'on' : 'off');

/** A button that shows the form it controls (console.js); without script the form is simply shown. */
function opener(label: string, formId: string): Html {
  return html`<button type="button" class="opener" aria-controls="${formId}" aria-expanded="true">${label}</button>`;
}

/** The projects the viewer may see, by organization, and the New project form. */
export function projectsPage(viewer: Viewer, orgs: Org[], projects: Project[], error: string | null): string {
  const byOrg = orgs.map((o) => {
    const mine = projects.filter((p) => p.orgId === o.id);
    return html`<section aria-labelledby="org-${o.id}">
<h2 id="org-${o.id}">${o.name}</h2>
${mine.length === 0 ? html`<p class="hint">No projects yet.</p>` : html`<ul class="list">${mine.map((p) => html`<li><a href="${BASE}/projects/${p.id}">${p.name}</a> <span class="meta">batch API ${yesNo(p.apiEnabled)}</span></li>`)}</ul>`}
</section>`;
  });
  const orgChoice =
    orgs.length > 1
      ? html`<label for="org">Organization</label><select id="org" name="org">${orgs.map((o) => html`<option value="${o.id}">${o.name}</option>`)}</select>`
      : orgs.length === 1
        ? html`<input type="hidden" name="org" value="${orgs[0]!.id}">`
        : html``;
  const canCreate = orgs.length > 0 || viewer.orgIds === null;
  return page(
    'Projects',
    html`<h1>Projects</h1>
${error === null ? '' : notice(error, 'error')}
${canCreate ? opener('New project', 'new-project') : notice('Your account is not a member of any organization yet; ask an admin to add you.')}
${canCreate
  ? html`<form id="new-project" method="post" action="${BASE}/projects" class="card collapsible">
  ${csrfField(viewer)}
  <label for="project-name">Name</label>
  <input id="project-name" name="name" required maxlength="200">
  ${orgChoice}
  <div class="check"><input id="api-enabled" name="api_enabled" type="checkbox" value="true"><label for="api-enabled">Batch API enabled</label></div>
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
  error: string | null;
  saved: boolean;
}

/** A project: its sources, usage and chart, settings. */
export function projectPage(viewer: Viewer, d: ProjectPageData): string {
  const p = d.project;
  const limit = p.monthlyEventLimit;
  return page(
    p.name,
    html`<p class="crumbs"><a href="${BASE}/projects">Projects</a> › ${d.org.name}</p>
<h1>${p.name}</h1>
<p class="meta">Project <code>${p.id}</code> · <a href="${BASE}/projects/${p.id}/people">People</a></p>
${d.error === null ? '' : notice(d.error, 'error')}
${d.saved ? notice('Settings saved.') : ''}
<section aria-labelledby="sources-h">
<h2 id="sources-h">Sources</h2>
${d.sources.length === 0 ? html`<p class="hint">No sources yet.</p>` : html`<ul class="list">${d.sources.map((s) => html`<li><a href="${BASE}/sources/${s.id}">${s.name}</a> <span class="meta">bot filter ${yesNo(s.filterBots)}, IP recording ${yesNo(s.recordIp)}</span></li>`)}</ul>`}
${opener('New source', 'new-source')}
<form id="new-source" method="post" action="${BASE}/projects/${p.id}/sources" class="card collapsible">
  ${csrfField(viewer)}
  <label for="source-name">Name</label>
  <input id="source-name" name="name" required maxlength="200">
  <div class="check"><input id="filter-bots" name="filter_bots" type="checkbox" value="true" checked><label for="filter-bots">Filter bots</label></div>
  <div class="check"><input id="record-ip" name="record_ip" type="checkbox" value="true"><label for="record-ip">Record IP addresses</label></div>
  <button type="submit">Create</button>
</form>
</section>
<section aria-labelledby="usage-h">
<h2 id="usage-h">Usage</h2>
<p class="usage"><strong>${d.used}</strong> ${d.used === 1 ? 'event' : 'events'} this month (${d.month}, UTC)${limit === null ? '; no plan limit' : html` of a plan limit of <strong>${limit}</strong>`}.</p>
${limit === null ? '' : html`<meter min="0" max="${limit}" value="${Math.min(d.used, limit)}" aria-label="Usage this month">${d.used} of ${limit}</meter>`}
${d.chart}
</section>
<section aria-labelledby="settings-h">
<h2 id="settings-h">Settings</h2>
<form method="post" action="${BASE}/projects/${p.id}/settings" class="card">
  ${csrfField(viewer)}
  <div class="check"><input id="settings-api" name="api_enabled" type="checkbox" value="true"${p.apiEnabled ? html` checked` : ''}><label for="settings-api">API enabled</label></div>
  <label for="settings-limit">Monthly event limit</label>
  <input id="settings-limit" name="monthly_event_limit" inputmode="numeric" pattern="[0-9]*" value="${limit === null ? '' : String(limit)}" aria-describedby="limit-hint">
  <p id="limit-hint" class="hint">Empty: no limit.</p>
  <label for="settings-retention">Retention days</label>
  <input id="settings-retention" name="retention_days" type="number" min="1" max="3650" required value="${p.retentionDays}">
  <button type="submit">Save</button>
</form>
</section>`,
    viewer,
  );
}
