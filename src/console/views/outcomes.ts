import { type Html, html } from '../../docs/html.js';
import { OUTCOMES, type SourceOutcomes } from '../../domain/outcomes/reports.js';
import type { StoredSample } from '../../stores/port-outcomes.js';
import { BASE, when } from '../layout.js';
import { formatCount } from './numbers.js';

const W = 600;
const H = 140;
const PAD = 20;

/**
 * A source's Item outcomes: the last 24 hours' counts by outcome, a chart per
 * hour (each bar stacked by outcome), and a table of the codes with the
 * newest item kept under each, expandable. Read from the outcome counts and
 * samples, never from the events.
 */
export function outcomesSection(o: SourceOutcomes, sourceId: string): Html {
  const all = OUTCOMES.reduce((n, k) => n + o.totals[k], 0);
  return html`<section aria-labelledby="outcomes-h" id="outcomes" data-refresh="${BASE}/sources/${sourceId}/outcomes">
<h2 id="outcomes-h">Item outcomes</h2>
<p class="hint">What became of every item sent to this source in the last 24 hours, from every server: counted per minute as each request is answered (dry runs apart), as <code>inlet outcomes --source ${sourceId}</code> counts them, and kept for refused and dropped items. The counts refresh every few seconds while this page is open. <code>inlet refused export --source ${sourceId}</code> writes the kept items as NDJSON for <code>inlet send</code>.</p>
${outcomeTotals(o)}
<div id="outcome-chart">${outcomeChart(o)}</div>
${all === 0 ? '' : o.codes.length === 0 ? html`<p class="hint">No item was refused or dropped in the last 24 hours.</p>` : codeTable(o)}
</section>`;
}

/** What the source page's script swaps in as it refreshes: the totals and the chart, rendered (and escaped) here, and each code's count. */
export function outcomeParts(o: SourceOutcomes): { totals: string; chart: string; codes: { outcome: string; code: string; count: string }[] } {
  return {
    totals: outcomeTotals(o).value,
    chart: outcomeChart(o).value,
    codes: o.codes.map((c) => ({ outcome: c.outcome, code: c.code, count: formatCount(c.count) })),
  };
}

function outcomeTotals(o: SourceOutcomes): Html {
  return html`<p class="outcome-totals" id="outcome-totals">Items in the last 24 hours: ${OUTCOMES.map((k) => html`<span class="${k}"><strong>${formatCount(o.totals[k])}</strong> ${k}</span> `)}</p>`;
}

function outcomeChart(o: SourceOutcomes): Html {
  const all = OUTCOMES.reduce((n, k) => n + o.totals[k], 0);
  return all === 0 ? html`<p class="hint">No items in the last 24 hours.</p>` : hourChart(o);
}

function hourChart(o: SourceOutcomes): Html {
  const sums = o.hours.map((h) => OUTCOMES.reduce((n, k) => n + h.counts[k], 0));
  const max = Math.max(...sums);
  const slot = (W - PAD) / o.hours.length;
  const bars = o.hours.map((h, i) => {
    let y = H - PAD;
    const x = (PAD + i * slot).toFixed(1);
    const parts = OUTCOMES.filter((k) => h.counts[k] > 0).map((k) => {
      const height = Math.max(1, Math.round(((H - PAD) * h.counts[k]) / max));
      y -= height;
      return html`<rect class="bar ${k}" x="${x}" y="${y}" width="${(slot * 0.8).toFixed(1)}" height="${height}"><title>${hourLabel(h.at)}: ${formatCount(h.counts[k])} ${k}</title></rect>`;
    });
    return html`${parts}`;
  });
  const first = hourLabel(o.hours[0]!.at);
  const last = hourLabel(o.hours.at(-1)!.at);
  return html`<figure class="chart outcomes">
<svg viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="outcomes-title outcomes-desc">
<title id="outcomes-title">Item outcomes per hour, last 24 hours</title>
<desc id="outcomes-desc">From ${first} to ${last} (UTC): ${OUTCOMES.map((k) => `${formatCount(o.totals[k])} ${k}`).join(', ')}; the busiest hour had ${formatCount(max)} items.</desc>
<line class="axis" x1="${PAD}" y1="${H - PAD}" x2="${W}" y2="${H - PAD}"></line>
<text class="label" x="${PAD}" y="${H - 4}">${first}</text>
<text class="label" x="${W}" y="${H - 4}" text-anchor="end">${last}</text>
<text class="label" x="0" y="12">${formatCount(max)}</text>
${bars}
</svg>
<figcaption>Items per hour by outcome (UTC): <span class="key accepted">accepted</span> <span class="key duplicate">duplicate</span> <span class="key dropped">dropped</span> <span class="key refused">refused</span></figcaption>
</figure>`;
}

function codeTable(o: SourceOutcomes): Html {
  return html`<div class="scroll"><table class="codes" id="outcome-codes"><thead><tr><th scope="col">Outcome</th><th scope="col">Code</th><th scope="col">Items</th><th scope="col">Latest kept item</th></tr></thead>
<tbody>${o.codes.map((c) => html`<tr data-code="${c.code}" data-outcome="${c.outcome}">
<td data-label="Outcome"><span class="tag ${c.outcome}">${c.outcome}</span></td>
<td data-label="Code">${c.events === undefined ? html`<code>${c.code}</code>` : html`<div><code>${c.code}</code>${eventList(c.events)}</div>`}</td>
<td data-label="Items">${formatCount(c.count)}</td>
<td data-label="Latest kept item">${c.latest === null ? html`<span class="meta">none kept</span>` : sampleDetails(c.latest)}</td>
</tr>`)}</tbody></table></div>`;
}

/** Events a code's row names at most; the rest are in the Tracking plan's Plan violations. */
const EVENTS_LISTED = 5;

/** A tracking plan's code by event: the events with the most items. */
function eventList(events: { event: string; count: number }[]): Html {
  const more = events.length - EVENTS_LISTED;
  return html`<ul class="meta code-events">${events.slice(0, EVENTS_LISTED).map((e) => html`<li><code>${e.event}</code> ${formatCount(e.count)}</li>`)}${more > 0 ? html`<li><a href="#violations-h">${formatCount(more)} more events</a></li>` : ''}</ul>`;
}

function sampleDetails(s: StoredSample): Html {
  const errors = JSON.parse(s.errors) as { field: string; code: string; message: string }[];
  return html`<details class="sample"><summary>${when(s.receivedAt)} · #${s.index} in <code>${s.requestId}</code></summary>
${errors.length === 0 ? '' : html`<ul class="errors">${errors.map((e) => html`<li><code>${e.code}</code> in <code>${e.field}</code> — ${e.message}</li>`)}</ul>`}
<pre class="item">${pretty(s)}</pre>${s.cut ? html`<p class="meta">Cut: the item was over 16 KiB; only its start is kept.</p>` : ''}
</details>`;
}

/** A kept item indented, or as it is when it was cut (no longer JSON). */
function pretty(s: StoredSample): string {
  return s.cut ? s.item : JSON.stringify(JSON.parse(s.item), null, 2);
}

function hourLabel(at: number): string {
  return new Date(at).toISOString().slice(5, 16).replace('T', ' ');
}

