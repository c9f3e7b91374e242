import { type Html, html } from '../../docs/html.js';
import type { Viewer } from '../../domain/accounts/accounts.js';
import { LAG_COUNT_CAP } from '../../domain/delivery/deliverer.js';
import type { DestinationListing } from '../../domain/delivery/destination-admin.js';
import { BASE, csrfField, notice, when } from '../layout.js';
import { formatCount } from './numbers.js';
import { type Typed, formError, valueOf } from './typed.js';

/** What the project page's Destinations show: each with where it stands, the form, and a new secret once. */
export interface DestinationsData {
  projectId: string;
  list: DestinationListing[];
  /** The New destination form, when it failed validation. */
  typed: Typed | null;
  /** Just made: its id and, for a webhook, its secret, shown this once. */
  made: { id: string; secret?: string } | null;
}

/** How far behind a destination is, in a few words. */
function lag(d: DestinationListing): string {
  if (d.lag_events === 0) return 'up to date';
  const oldest = d.oldest_undelivered_at === null ? '' : `, oldest from ${when(Date.parse(d.oldest_undelivered_at))}`;
  // Counted up to a cap: a count that reached it is a floor.
  const atLeast = d.lag_events >= LAG_COUNT_CAP ? 'at least ' : '';
  return `${atLeast}${formatCount(d.lag_events)} ${d.lag_events === 1 ? 'event' : 'events'} behind${oldest}`;
}

/** The Destinations section of a project's page (URLs masked; a secret only right after creation). */
export function destinationsSection(viewer: Viewer, d: DestinationsData, opener: (label: string, formId: string, open?: boolean) => Html): Html {
  const t = d.typed;
  const kind = valueOf(t, 'kind', 'webhook');
  const rows = d.list.map(
    (x) => html`<li id="${x.id}"><strong>${x.kind}</strong> <code>${x.url}</code>
  <span class="meta">${x.status} · ${lag(x)} · ${formatCount(x.delivered)} delivered</span>
  ${x.last_error === null ? '' : html`<p class="field-error">Last error: ${x.last_error}</p>`}
  <form method="post" action="${BASE}/destinations/${x.id}/${x.status === 'paused' ? 'resume' : 'pause'}" class="inline">
    ${csrfField(viewer)}<button type="submit">${x.status === 'paused' ? 'Resume' : 'Pause'}</button>
  </form></li>`,
  );
  return html`<section aria-labelledby="destinations-h">
<h2 id="destinations-h">Destinations</h2>
${d.made === null ? '' : notice(d.made.secret === undefined ? `Destination ${d.made.id} created.` : `Destination ${d.made.id} created. Its signing secret, shown only now: ${d.made.secret}`)}
${d.list.length === 0 ? html`<p class="hint">No destinations yet: stored track events are delivered to a webhook, or into a PostgreSQL table.</p>` : html`<ul class="list">${rows}</ul>`}
${opener('New destination', 'new-destination', t !== null)}
<form id="new-destination" method="post" action="${BASE}/projects/${d.projectId}/destinations" class="card collapsible">
  ${csrfField(viewer)}
  ${formError(t, [])}
  <label for="destination-kind">Kind</label>
  <select id="destination-kind" name="kind">
    <option value="webhook"${kind === 'webhook' ? html` selected` : ''}>webhook</option>
    <option value="postgres"${kind === 'postgres' ? html` selected` : ''}>postgres</option>
  </select>
  <label for="destination-url">URL</label>
  <input id="destination-url" name="url" required type="text" autocomplete="off" aria-describedby="destination-url-hint">
  <p id="destination-url-hint" class="hint">https://… for a webhook; postgres://user:password@host/db for a table. Shown with its password masked.</p>
  <label for="destination-table">Table</label>
  <input id="destination-table" name="table" value="${valueOf(t, 'table', '')}" aria-describedby="destination-table-hint">
  <p id="destination-table-hint" class="hint">For postgres only: made if missing.</p>
  <button type="submit">Create</button>
</form>
</section>`;
}
