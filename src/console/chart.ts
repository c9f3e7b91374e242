import { type Html, html } from '../docs/html.js';
import type { DayCount } from '../stores/port-console.js';
import { formatCount } from './views/numbers.js';

const DAY_MS = 86_400_000;
const W = 600;
const H = 160;
const PAD = 20;

/** The last `days` UTC days up to and including today's, oldest first, as "YYYY-MM-DD". */
export function lastDays(now: number, days: number): string[] {
  const today = Math.floor(now / DAY_MS);
  return Array.from({ length: days }, (_, i) => new Date((today - days + 1 + i) * DAY_MS).toISOString().slice(0, 10));
}

/**
 * Items accepted per day (by arrival, read from the outcome counts: no event
 * is read; every type of item, so more than the events metered) as an inline SVG bar chart, drawn on the server: no script,
 * and it scales to any width (viewBox). Each bar has a title with its count.
 * With no item in the period there is nothing to draw, and it says so.
 */
export function dayChart(days: string[], counts: DayCount[], projectId: string): Html {
  const byDay = new Map(counts.map((c) => [c.day, c.events]));
  const values = days.map((d) => byDay.get(d) ?? 0);
  const max = Math.max(...values);
  const total = values.reduce((a, b) => a + b, 0);
  if (total === 0) return chartNote(html`No items accepted in the last ${days.length} days (${days[0]!} to ${days.at(-1)!}, by arrival).`);
  const slot = (W - PAD) / days.length;
  const bars = days.map((d, i) => {
    const h = Math.round(((H - PAD) * values[i]!) / max);
    const x = (PAD + i * slot).toFixed(1);
    return html`<rect class="bar" x="${x}" y="${H - PAD - h}" width="${(slot * 0.8).toFixed(1)}" height="${h}"><title>${d}: ${items(values[i]!)}</title></rect>`;
  });
  return html`<figure class="chart">
<svg viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="chart-title chart-desc">
<title id="chart-title">Items accepted per day, last ${days.length} days</title>
<desc id="chart-desc">${items(total)} from ${days[0]!} to ${days.at(-1)!}; the highest day had ${formatCount(max)}.</desc>
<line class="axis" x1="${PAD}" y1="${H - PAD}" x2="${W}" y2="${H - PAD}"></line>
<text class="label" x="${PAD}" y="${H - 4}">${days[0]!}</text>
<text class="label" x="${W}" y="${H - 4}" text-anchor="end">${days.at(-1)!}</text>
<text class="label" x="0" y="12">${formatCount(max)}</text>
${bars}
</svg>
<figcaption>Items accepted per day (by arrival, UTC), last ${days.length} days: ${items(total)} in all. Items of every type: track events, and the identify, group and alias items that are not metered; as <code>inlet outcomes --project ${projectId} --by day</code> counts them (outcome accepted).</figcaption>
</figure>`;
}

const items = (n: number): string => `${formatCount(n)} ${n === 1 ? 'item' : 'items'}`;

function chartNote(text: Html): Html {
  return html`<figure class="chart"><figcaption>${text}</figcaption></figure>`;
}
