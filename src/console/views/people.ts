import { type Html, html } from '../../docs/html.js';
import type { Viewer } from '../../domain/accounts/accounts.js';
import type { PersonView, Project } from '../../stores/port.js';
import type { PersonCursor, PersonEvents, PersonListing } from '../../stores/port-console.js';
import { BASE, notice, page, when } from '../layout.js';
import { formatCount } from './numbers.js';

/** What the people page shows. */
export interface PeoplePageData {
  project: Project;
  query: string;
  /** Null when the server was too busy reading other pages to search. */
  matches: { distinctId: string; personId: string }[] | null;
  person: PersonView | null;
  /** Null when the server was too busy reading other pages to read them. */
  events: PersonEvents | null;
  /** The project's people, newest first, when no one was asked for. */
  listing: { persons: PersonListing[]; next: PersonCursor | null } | null;
  /** How many people the project has, beside the listing; null when not counted (the server was too busy reading other pages). */
  total: number | null;
  /** Whether the listing is a later page (a link back to the first is shown). */
  paged: boolean;
}

/** The project's people, a page of them, with Next when there are more. */
function listingOf(base: string, listing: NonNullable<PeoplePageData['listing']>, total: number | null, paged: boolean): Html {
  const rows = listing.persons.map(
    (p) => html`<tr><td><a href="${base}?person=${p.id}"><code>${p.id}</code></a></td><td>${p.distinctIds.length === 0 ? html`<span class="meta">none yet</span>` : p.distinctIds.join(', ')}${p.moreIds ? ', …' : ''}</td><td>${when(p.createdAt)}</td></tr>`,
  );
  const next = listing.next === null ? '' : html`<a href="${base}?after=${`${listing.next.createdAt}.${listing.next.id}`}" rel="next">Next</a>`;
  return html`<section aria-labelledby="people-h">
<h2 id="people-h">People, newest first</h2>
<p class="meta" id="people-total">${total === null ? 'Not counted: the server is busy reading other pages. Reload in a moment.' : `${formatCount(total)} ${total === 1 ? 'person' : 'people'} in all`}</p>
${listing.persons.length === 0
  ? html`<p class="hint">${paged ? 'No more people.' : 'No people yet: they appear as items with a distinct_id or anonymous_id are stored.'}</p>`
  : html`<div class="scroll"><table><thead><tr><th scope="col">Person</th><th scope="col">Distinct ids</th><th scope="col">First seen</th></tr></thead><tbody>${rows}</tbody></table></div>`}
<nav aria-label="Pages of people" class="pager">${paged ? html`<a href="${base}">Newest</a>` : ''}${next}</nav>
</section>`;
}

/** Search by distinct id; the person found, with its ids, traits, groups and latest events. */
export function peoplePage(viewer: Viewer, d: PeoplePageData): string {
  const p = d.person;
  const base = `${BASE}/projects/${d.project.id}/people`;
  return page(
    'People',
    html`<p class="crumbs"><a href="${BASE}/projects">Projects</a> › <a href="${BASE}/projects/${d.project.id}">${d.project.name}</a></p>
<h1>People</h1>
<form method="get" action="${base}" class="card" role="search">
  <label for="q">Distinct id</label>
  <input id="q" name="q" value="${d.query}" required maxlength="200">
  <button type="submit">Search</button>
</form>
${d.query === '' || p !== null ? '' : d.matches === null ? html`<p class="hint">Not searched: the server is busy reading other pages. Search again in a moment.</p>` : d.matches.length === 0 ? notice(`No person has a distinct id starting with "${d.query}".`) : ''}
${p === null && d.matches !== null && d.matches.length > 0
  ? html`<h2>Distinct ids starting with “${d.query}”</h2><ul class="list">${d.matches.map((m) => html`<li><a href="${base}?q=${encodeURIComponent(m.distinctId)}">${m.distinctId}</a> <span class="meta">${m.personId}</span></li>`)}</ul>`
  : ''}
${d.listing === null ? '' : listingOf(base, d.listing, d.total, d.paged)}
${p === null
  ? ''
  : html`<section aria-labelledby="person-h">
<h2 id="person-h">Person <code>${p.id}</code></h2>
<p class="meta">First seen ${when(p.createdAt)}</p>
<h3>Ids</h3>
<ul class="list">${p.distinctIds.map((id) => html`<li><code>${id}</code></li>`)}</ul>
<h3>Traits</h3>
${Object.keys(p.traits).length === 0
  ? html`<p class="hint">No traits.</p>`
  : html`<div class="scroll"><table><thead><tr><th scope="col">Trait</th><th scope="col">Value</th></tr></thead><tbody>${Object.entries(p.traits).map(([k, v]) => html`<tr><td>${k}</td><td><code>${JSON.stringify(v)}</code></td></tr>`)}</tbody></table></div>`}
<h3>Groups</h3>
${p.groups.length === 0
  ? html`<p class="hint">In no group. A group item with this person's distinct id makes it a member.</p>`
  : html`<div class="scroll"><table><thead><tr><th scope="col">Group type</th><th scope="col">Group key</th></tr></thead><tbody>${p.groups.map((g) => html`<tr><td><code>${g.groupType}</code></td><td>${g.groupKey}</td></tr>`)}</tbody></table></div>`}
<h3>Latest events</h3>
${d.events === null
  ? html`<p class="hint">Not shown: the server is busy reading other pages. Reload in a moment.</p>`
  : html`${d.events.events.length === 0
  ? html`<p class="hint">None stored.</p>`
  : html`<div class="scroll"><table><thead><tr><th scope="col">Time</th><th scope="col">Event</th><th scope="col">Distinct id</th><th scope="col">Properties</th></tr></thead><tbody>${d.events.events.map((e) => html`<tr><td>${when(e.timestamp)}</td><td>${e.event}</td><td>${e.distinctId ?? '—'}</td><td><code>${JSON.stringify(e.properties)}</code></td></tr>`)}</tbody></table></div>`}${d.events.complete
  ? ''
  : html`<p class="hint" id="person-events-partial">The server is still indexing events by person: newer ones may not be shown yet. All of them: <code>inlet events list --source SOURCE --distinct-id ID</code>.</p>`}`}
</section>`}`,
    viewer,
  );
}
