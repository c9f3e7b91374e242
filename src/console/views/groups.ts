import { html } from '../../docs/html.js';
import type { Viewer } from '../../domain/accounts/accounts.js';
import type { Project } from '../../stores/port.js';
import type { GroupListing } from '../../stores/port-console.js';
import { BASE, notice, page, when } from '../layout.js';
import { formatCount } from './numbers.js';

/** What the Groups page shows. */
export interface GroupsPageData {
  project: Project;
  types: string[];
  /** The type chosen ('' for all) and the key prefix typed. */
  type: string;
  query: string;
  /** Null when the server was too busy reading other pages to read them. */
  groups: GroupListing[] | null;
  /** The most groups a page lists. */
  limit: number;
}

const members = (g: GroupListing): string => `${formatCount(g.members)}${g.moreMembers ? '+' : ''} ${g.members === 1 && !g.moreMembers ? 'member' : 'members'}`;

/** A project's groups: their types, keys, traits and members, found by type and key prefix. */
export function groupsPage(viewer: Viewer, d: GroupsPageData): string {
  const base = `${BASE}/projects/${d.project.id}/groups`;
  const found = d.groups;
  return page(
    'Groups',
    html`<p class="crumbs"><a href="${BASE}/projects">Projects</a> › <a href="${BASE}/projects/${d.project.id}">${d.project.name}</a></p>
<h1>Groups</h1>
<p class="hint">Groups are made by <code>group</code> items (and <code>$groups</code> on track events); a group item with a <code>distinct_id</code> makes that person a member. <code>inlet group show --project ${d.project.id} --type T --key K</code> lists a group's members.</p>
<section aria-labelledby="types-h">
<h2 id="types-h">Group types</h2>
${d.types.length === 0
  ? html`<p class="hint">No groups yet.</p>`
  : html`<ul class="list">${d.types.map((t) => html`<li><a href="${base}?type=${encodeURIComponent(t)}"><code>${t}</code></a></li>`)}</ul>`}
</section>
<form method="get" action="${base}" class="card" role="search">
  <label for="group-type">Group type</label>
  <select id="group-type" name="type">
    <option value=""${d.type === '' ? html` selected` : ''}>All types</option>
    ${d.types.map((t) => html`<option value="${t}"${d.type === t ? html` selected` : ''}>${t}</option>`)}
  </select>
  <label for="group-key">Group key</label>
  <input id="group-key" name="q" value="${d.query}" maxlength="200" aria-describedby="group-key-hint">
  <p id="group-key-hint" class="hint">Keys starting with what is typed (case counts); empty: every key.</p>
  <button type="submit">Search</button>
</form>
<section aria-labelledby="groups-h">
<h2 id="groups-h">${d.type === '' ? 'All types' : `Type ${d.type}`}${d.query === '' ? '' : `, keys starting with “${d.query}”`}</h2>
${found === null
  ? notice('Not read: the server is busy reading other pages. Reload in a moment.')
  : found.length === 0
    ? html`<p class="hint">${d.query === '' ? 'No groups.' : `No group has a key starting with "${d.query}".`}</p>`
    : html`<div class="scroll"><table id="groups"><thead><tr><th scope="col">Type</th><th scope="col">Key</th><th scope="col">Traits</th><th scope="col">Members</th><th scope="col">First seen</th></tr></thead>
<tbody>${found.map((g) => html`<tr>
<td data-label="Type"><code>${g.groupType}</code></td>
<td data-label="Key">${g.groupKey}</td>
<td data-label="Traits">${Object.keys(g.traits).length === 0 ? html`<span class="meta">none</span>` : html`<code>${JSON.stringify(g.traits)}</code>`}</td>
<td data-label="Members">${members(g)}</td>
<td data-label="First seen">${when(g.createdAt)}</td>
</tr>`)}</tbody></table></div>
${found.length >= d.limit ? html`<p class="hint">The first ${formatCount(d.limit)} shown, by type then key: type more of the key to narrow the search.</p>` : ''}`}
</section>`,
    viewer,
  );
}
