import { type Html, html } from '../../docs/html.js';
import type { Viewer } from '../../domain/accounts/accounts.js';
import { LAG_COUNT_CAP } from '../../domain/delivery/deliverer.js';
import type { DestinationListing } from '../../domain/delivery/destination-admin.js';
import { type OfferedField, offeredFields } from '../../domain/delivery/destination-fields.js';
import type { DestinationKinds } from '../../stores/port-destinations.js';
import type { Project, Source } from '../../stores/port.js';
import { BASE, csrfField, notice, page, when } from '../layout.js';
import { formatCount } from './numbers.js';
import { type Typed, fieldError, formError, invalidAttrs, valueOf } from './typed.js';

/** A destination as the project page lists it: where delivery stands, and what it takes (no source or event named: all). */
export type DestinationRow = DestinationListing & { sources: string[]; events: string[] };

/** What the project page's Destinations show: each with where it stands, the form, and a new secret once. */
export interface DestinationsData {
  projectId: string;
  /** The kinds a destination may be of: the form's Kind and fields come from their declarations. */
  kinds: DestinationKinds;
  list: DestinationRow[];
  /** The project's sources, which the New destination form offers to pick from. */
  sources: Source[];
  /** The New destination form, when it failed validation. */
  typed: Typed | null;
  /** Just made: its id and what Inlet made for it (a signing secret), shown this once. */
  made: { id: string; once: { label: string; value: string }[] } | null;
  /** A destination's Replay form, when it failed validation. */
  replay: { id: string; typed: Typed } | null;
  /** What was just done (replayed, deleted), said at the top of the section. */
  done: string | null;
}

/** How far behind a destination is, in a few words. */
function lag(d: DestinationListing): string {
  if (d.lag_events === 0) return 'up to date';
  const oldest = d.oldest_undelivered_at === null ? '' : `, oldest from ${when(Date.parse(d.oldest_undelivered_at))}`;
  // Counted up to a cap: a count that reached it is a floor.
  const atLeast = d.lag_events >= LAG_COUNT_CAP ? 'at least ' : '';
  return `${atLeast}${formatCount(d.lag_events)} ${d.lag_events === 1 ? 'event' : 'events'} behind${oldest}`;
}

/** What a destination takes, by source name (an id whose source is gone stays an id) and event name. */
function takes(d: DestinationRow, sources: Source[]): string {
  const name = new Map(sources.map((s) => [s.id, s.name]));
  const from = d.sources.length === 0 ? 'every source' : `sources ${d.sources.map((id) => name.get(id) ?? id).join(', ')}`;
  const which = d.events.length === 0 ? 'every event' : `events ${d.events.join(', ')}`;
  return `Takes the track events of ${from}; ${which}.`;
}

function row(viewer: Viewer, x: DestinationRow, d: DestinationsData): Html {
  const t = d.replay?.id === x.id ? d.replay.typed : null;
  const field = `replay-${x.id}`;
  return html`<li id="${x.id}"><strong>${x.kind}</strong> <code>${x.url}</code>
  <span class="meta">${x.status} · ${lag(x)} · ${formatCount(x.delivered)} ${x.delivered === 1 ? 'event' : 'events'} delivered</span>
  <p class="meta">${takes(x, d.sources)}</p>
  ${x.paused_reason === null ? '' : html`<p class="field-error">Paused by its receiver: ${x.paused_reason}</p>`}
  ${x.last_error === null || x.paused_reason !== null ? '' : html`<p class="field-error">Last error: ${x.last_error}</p>`}
  <form method="post" action="${BASE}/destinations/${x.id}/${x.status === 'paused' ? 'resume' : 'pause'}" class="inline">
    ${csrfField(viewer)}<button type="submit">${x.status === 'paused' ? 'Resume' : 'Pause'}</button>
  </form>
  <form method="post" action="${BASE}/destinations/${x.id}/replay" class="inline">
    ${csrfField(viewer)}
    <label for="${field}">Replay from</label>
    <input id="${field}" name="since" required placeholder="2026-01-31 12:00" value="${valueOf(t, 'since', '')}"${invalidAttrs(t, 'since', field, `${field}-hint`)}>
    <button type="submit">Replay</button>
    ${fieldError(t, 'since', field)}
    <span id="${field}-hint" class="hint">UTC, or ISO 8601 with an offset: the events that arrived from then on are delivered again.</span>
  </form>
  <form method="get" action="${BASE}/destinations/${x.id}/delete" class="inline"><button type="submit" class="danger">Delete</button></form></li>`;
}

/**
 * A field of the New destination form, for every kind that has it. A secret
 * value (a URL that may hold a password) is not typed back into the form.
 */
function fieldInput(t: Typed | null, f: OfferedField): Html {
  const id = `destination-${f.name}`;
  const hint = f.secret ? `${f.help}. Shown masked.` : `${f.help}.`;
  if (f.choices !== undefined) {
    // Left at its first option, an optional field is not given: the kind's default.
    const picked = valueOf(t, f.name, '');
    const options = [...(f.required ? [] : [html`<option value="">default</option>`]), ...f.choices.map((c) => html`<option value="${c}"${picked === c ? html` selected` : ''}>${c}</option>`)];
    return html`<label for="${id}">${f.label}</label>
  <select id="${id}" name="${f.name}"${f.required ? html` required` : ''} aria-describedby="${id}-hint">${options}</select>
  <p id="${id}-hint" class="hint">${hint}</p>`;
  }
  const value = f.secret ? '' : html` value="${valueOf(t, f.name, '')}"`;
  return html`<label for="${id}">${f.label}</label>
  <input id="${id}" name="${f.name}"${f.required ? html` required` : ''}${f.secret ? html` type="text" autocomplete="off"` : ''}${value} aria-describedby="${id}-hint">
  <p id="${id}-hint" class="hint">${hint}</p>`;
}

/** The Destinations section of a project's page (URLs masked; a secret only right after creation). */
export function destinationsSection(viewer: Viewer, d: DestinationsData, opener: (label: string, formId: string, open?: boolean) => Html): Html {
  const t = d.typed;
  const kind = valueOf(t, 'kind', d.kinds[0]?.name ?? '');
  const picked = new Set(t === null ? [] : t.values.getAll('sources'));
  return html`<section aria-labelledby="destinations-h">
<h2 id="destinations-h">Destinations</h2>
${d.made === null ? '' : notice(`Destination ${d.made.id} created.${d.made.once.map((m) => ` Its ${m.label}, shown only now: ${m.value}`).join('')}`)}
${d.done === null ? '' : notice(d.done)}
${d.list.length === 0 ? html`<p class="hint">No destinations yet: stored track events are delivered ${d.kinds.map((k) => k.about).join(', or ')}.</p>` : html`<ul class="list">${d.list.map((x) => row(viewer, x, d))}</ul>`}
${opener('New destination', 'new-destination', t !== null)}
<form id="new-destination" method="post" action="${BASE}/projects/${d.projectId}/destinations" class="card collapsible">
  ${csrfField(viewer)}
  ${formError(t, [])}
  <label for="destination-kind">Kind</label>
  <select id="destination-kind" name="kind">
    ${d.kinds.map((k) => html`<option value="${k.name}"${kind === k.name ? html` selected` : ''}>${k.name}</option>`)}
  </select>
  ${offeredFields(d.kinds).map((f) => fieldInput(t, f))}
  <fieldset aria-describedby="destination-sources-hint">
    <legend>Sources</legend>
    ${d.sources.map((s) => html`<div class="check"><input id="destination-source-${s.id}" name="sources" type="checkbox" value="${s.id}"${picked.has(s.id) ? html` checked` : ''}><label for="destination-source-${s.id}">${s.name}</label></div>`)}
    <p id="destination-sources-hint" class="hint">${d.sources.length === 0 ? 'The project has no sources yet; the destination takes every source.' : 'None ticked: every source, those made later too.'}</p>
  </fieldset>
  <label for="destination-events">Events</label>
  <input id="destination-events" name="events" value="${valueOf(t, 'events', '')}" aria-describedby="destination-events-hint">
  <p id="destination-events-hint" class="hint">Event names separated by commas, such as <code>Order placed, Signed up</code>. Empty: every event.</p>
  <button type="submit">Create</button>
</form>
</section>`;
}

/** The event names typed in the Events field: separated by commas, each trimmed, empty ones left out. */
export function eventNames(v: string | null): string[] {
  return (v ?? '').split(',').map((e) => e.trim()).filter((e) => e !== '');
}

/** The kinds' fields as the form sent them, trimmed; an optional one left empty is not given. */
export function fieldValues(kinds: DestinationKinds, form: URLSearchParams): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of offeredFields(kinds)) {
    const v = (form.get(f.name) ?? '').trim();
    if (v !== '' || f.required) out[f.name] = v;
  }
  return out;
}

/** The confirmation asked before a destination is deleted. */
export function deleteDestinationPage(viewer: Viewer, d: DestinationListing, project: Project): string {
  return page(
    'Delete destination',
    html`<p class="crumbs"><a href="${BASE}/projects/${project.id}">${project.name}</a></p>
<h1>Delete destination <code>${d.id}</code>?</h1>
<p><strong>${d.kind}</strong> <code>${d.url}</code> <span class="meta">${d.status} · ${lag(d)}</span></p>
${notice('Delivery to it stops at once, on every server, and what it had not delivered yet is not delivered. Its secret and its place in the events are gone: this cannot be undone.', 'error')}
<form method="post" action="${BASE}/destinations/${d.id}/delete" class="card">
  ${csrfField(viewer)}
  <button type="submit" class="danger">Delete</button>
  <a href="${BASE}/projects/${project.id}#destinations-h">Cancel</a>
</form>`,
    viewer,
  );
}
