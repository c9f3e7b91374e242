import { type Html, html } from '../../docs/html.js';
import type { Viewer } from '../../domain/accounts/accounts.js';
import type { KeyView, NewKeyView } from '../../domain/admin.js';
import type { LiveItem, LiveRequest } from '../../domain/live-window.js';
import type { Project, Source } from '../../stores/port.js';
import { BASE, csrfField, notice, page, when } from '../layout.js';
import { type Typed, fieldError, invalidAttrs } from './typed.js';
import type { SourceOutcomes } from '../../domain/outcomes/reports.js';
import { outcomesSection } from './outcomes.js';

const iso = (s: string | null): string => (s === null ? '—' : when(Date.parse(s)));

const GRACES = ['now', '24h', '7d'] as const;

function graceSelect(id: string, chosen: string, typed: Typed | null): Html {
  return html`<select id="${id}" name="grace"${invalidAttrs(typed, 'grace', id)}>${GRACES.map((g) => html`<option value="${g}"${g === chosen ? html` selected` : ''}>${g}</option>`)}</select>`;
}

function keyRow(viewer: Viewer, k: KeyView): Html {
  const actions =
    k.status === 'active'
      ? html`<form method="get" action="${BASE}/keys/${k.id}/roll" class="inline roll">
  <label for="grace-${k.id}">Grace period</label>
  ${graceSelect(`grace-${k.id}`, 'now', null)}
  <button type="submit">Roll</button>
</form>`
      : html``;
  const revoke =
    k.status === 'active' || k.status === 'expiring'
      ? html`<form method="get" action="${BASE}/keys/${k.id}/revoke" class="inline"><button type="submit" class="danger">Revoke</button></form>`
      : html``;
  return html`<tr>
<td data-label="Key"><code class="key">${k.prefix}…${k.last_four}</code></td>
<td data-label="Status">${k.status}${k.expires_at === null ? '' : html`<br><span class="meta">until ${iso(k.expires_at)}</span>`}</td>
<td data-label="Created">${iso(k.created_at)}</td>
<td data-label="Last used">${iso(k.last_used_at)}</td>
<td data-label="Actions" class="actions">${actions}${revoke}</td>
</tr>`;
}

/** The new key, shown once: a read-only field and a Copy button. Filled by console.js, or here after a form post without script. */
function newKeyBox(shown: NewKeyView | null): Html {
  return html`<div id="new-key-box" class="card reveal"${shown === null ? html` hidden` : ''}>
  <label for="new-key">New key</label>
  <div class="copy-row"><input id="new-key" type="text" readonly value="${shown?.key ?? ''}" autocomplete="off" spellcheck="false"><button type="button" id="copy-key" data-copy="new-key">Copy</button></div>
  <p class="hint" role="status" id="new-key-note">${shown === null ? '' : 'Store it now: it is not shown again.'}</p>
</div>`;
}

/**
 * A live line's one time, compact so that it never wraps: the clock time
 * (UTC) when it falls on the answer's day, else the date and minute; the
 * full time is its title. Lines are sent to every view, so they stay short.
 */
function liveTime(ms: number, answeredAt: number): Html {
  const iso = new Date(ms).toISOString();
  const sameDay = iso.slice(0, 10) === new Date(answeredAt).toISOString().slice(0, 10);
  return html`<time datetime="${iso}" title="${when(ms)}">${sameDay ? iso.slice(11, 19) : `${iso.slice(0, 10)} ${iso.slice(11, 16)}`}</time>`;
}

/** Where the item was in its request: its index as the API's answer counts it (from 0), never a sequence number of the stream. */
function livePosition(r: LiveRequest, i: LiveItem): Html {
  return html`<span class="pos">#${i.index} of ${r.size} in <code>${r.requestId}</code></span>`;
}

/** One line of the live view. */
export function liveLine(r: LiveRequest, i: LiveItem): Html {
  const pos = livePosition(r, i);
  if (i.outcome === 'refused') {
    // Refused before its time was read: the answer's time stands in.
    const t = liveTime(r.at, r.at);
    return html`<li class="refused">${t} <span class="tag">refused</span> <code>${i.code ?? ''}</code> in <code>${i.field ?? ''}</code>${i.event === null ? '' : html` (${i.event})`} — ${i.message ?? ''} ${pos}</li>`;
  }
  const t = liveTime(i.timestamp ?? r.at, r.at);
  // A track by its event name; an item of another type, which has none, by its type.
  const what = i.event ?? i.type ?? '';
  const reason = i.outcome === 'dropped' ? html` <code>${i.code ?? ''}</code>` : '';
  return html`<li class="${i.outcome}">${t} <span class="tag">${i.outcome}</span>${reason} <strong>${what}</strong> · ${i.distinctId ?? '—'}${i.personId === null ? '' : html` · <code>${i.personId}</code>`} ${pos}</li>`;
}

/** A request's lines, its last item first, so that the whole list reads newest first. */
export function liveLines(r: LiveRequest): Html {
  return html`${[...r.items].reverse().map((i) => liveLine(r, i))}`;
}

/** What the source page shows. */
export interface SourcePageData {
  source: Source;
  project: Project;
  keys: KeyView[];
  recent: LiveRequest[];
  /** The last 24 hours' outcomes, from every server. */
  outcomes: SourceOutcomes;
  newKey: NewKeyView | null;
  error: string | null;
  /** The Tracking plan section (views/plans.ts). */
  plan?: Html;
}

/** A source: its keys, Create key, and the live view of its answers. */
export function sourcePage(viewer: Viewer, d: SourcePageData): string {
  const s = d.source;
  return page(
    s.name,
    html`<p class="crumbs"><a href="${BASE}/projects">Projects</a> › <a href="${BASE}/projects/${d.project.id}">${d.project.name}</a></p>
<h1>${s.name}</h1>
<p class="meta">Source <code>${s.id}</code> · bot filter ${s.filterBots ? 'on' : 'off'} · IP recording ${s.recordIp ? 'on' : 'off'}</p>
${d.error === null ? '' : notice(d.error, 'error')}
${d.project.apiEnabled ? '' : apiOff(d.project)}
<section aria-labelledby="keys-h">
<h2 id="keys-h">Keys</h2>
<div id="keys-list">${d.keys.length === 0
  ? html`<p class="hint">No keys yet.</p>`
  : html`<div class="scroll"><table class="keys"><thead><tr><th scope="col">Key</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Actions</th></tr></thead>
<tbody>${d.keys.map((k) => keyRow(viewer, k))}</tbody></table></div>`}</div>
<form method="post" action="${BASE}/sources/${s.id}/keys" data-key-form>${csrfField(viewer)}<button type="submit">Create key</button></form>
${newKeyBox(d.newKey)}
</section>
${d.plan ?? ''}
${outcomesSection(d.outcomes, s.id)}
<section aria-labelledby="live-h">
<h2 id="live-h">Live events</h2>
<p class="hint">What this server answers for this source while this page is open, newest first, as it happens (items refused with their error code and field). Each line shows the item's time (UTC; a refused item's, the answer's) and where it was in its request: <em>#3 of 500 in req_…</em> is index 3, counted from 0 as the API's answer counts it, of that request's 500 items. Other servers of the same deployment show their own.</p>
<p id="live-status" class="meta" role="status"></p>
<ol id="live" class="live" data-live="${BASE}/sources/${s.id}/live">${d.recent.map(liveLines)}</ol>
</section>`,
    viewer,
  );
}

/**
 * Keys of a project whose batch API is off are answered 404 whatever they
 * send: said on the source page, with the two ways to turn it on.
 */
function apiOff(p: Project): Html {
  return html`<div class="notice warn" role="status" id="api-off">
<p><strong>The batch API is off for project ${p.name}.</strong> Requests with these keys are answered 404 <code>not_found</code>, and nothing is stored, until it is on.</p>
<p>Turn it on in the <a href="${BASE}/projects/${p.id}#settings">project’s settings</a> (tick <em>API enabled</em>, then <em>Save</em>), or on the server: <code>inlet project update ${p.id} --api-enabled true</code></p>
</div>`;
}

/** The confirmation asked before a key is rolled; `typed` when the grace period sent was refused. */
export function rollPage(viewer: Viewer, key: KeyView, source: Source, grace: string, typed: Typed | null): string {
  const chosen = (GRACES as readonly string[]).includes(grace) ? grace : 'now';
  return page(
    'Roll key',
    html`<p class="crumbs"><a href="${BASE}/sources/${source.id}">${source.name}</a></p>
<h1>Roll key <code>${key.prefix}…${key.last_four}</code>?</h1>
${notice('A new key is made and shown once. With the grace period now, requests still sending this key are refused from the very next one; with 24h or 7d it keeps working that long, then stops.', 'error')}
<form method="post" action="${BASE}/keys/${key.id}/roll" class="card">
  ${csrfField(viewer)}
  <label for="grace">Grace period</label>
  ${graceSelect('grace', chosen, typed)}
  ${fieldError(typed, 'grace', 'grace')}
  <button type="submit" class="danger">Roll</button>
  <a href="${BASE}/sources/${source.id}">Cancel</a>
</form>`,
    viewer,
  );
}

/** The confirmation asked before a key is revoked. */
export function revokePage(viewer: Viewer, key: KeyView, source: Source): string {
  return page(
    'Revoke key',
    html`<p class="crumbs"><a href="${BASE}/sources/${source.id}">${source.name}</a></p>
<h1>Revoke key <code>${key.prefix}…${key.last_four}</code>?</h1>
${notice('Requests with this key are refused from the very next one. This cannot be undone.', 'error')}
<form method="post" action="${BASE}/keys/${key.id}/revoke" class="card">
  ${csrfField(viewer)}
  <button type="submit" class="danger">Revoke</button>
  <a href="${BASE}/sources/${source.id}">Cancel</a>
</form>`,
    viewer,
  );
}
