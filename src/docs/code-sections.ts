/**
 * The per-code sections of the reference page, generated from the error
 * table: each code gets one element whose id is the code, which is what every
 * docs_url fragment points at.
 */
import { STATUS_CODES } from 'node:http';
import { DROP_REASONS, type DropReason, ITEM_ERRORS, REQUEST_ERRORS, type RequestErrorCode } from '../errors/codes.js';
import { type Html, anchor, html } from './html.js';

/** Which table a code comes from; written on its anchor so the sync test can find every code anchor. */
export type CodeTable = 'request' | 'item' | 'drop';

// Drop reasons are not failures, so what a client can do differs for each.
const DROP_ADVICE: Record<DropReason, string> = {
  bot_filtered: 'No. The same item is dropped again. If this user agent is not a bot, or the source should keep bot traffic, turn bot filtering off for the source (inlet source update <source id> --filter-bots false).',
  collection_paused:
    'No. Nothing is kept while collection is paused. It resumes when a new calendar month (UTC) begins, or once the operator raises the limit (inlet project update <project id> --monthly-event-limit <n>, or none); identify items are still applied meanwhile.',
  suppressed:
    'No. The person was erased at their request, and nothing more is kept for this distinct_id or for their person id as an anonymous_id. Stop sending it; only an operator can lift the suppression (inlet person unsuppress).',
};

const ITEM_ADVICE = 'No. Fix the item: sent again unchanged, it gets the same error. The other items of the request are not affected.';

function codeSection(table: CodeTable, id: string, facts: [string, string | Html][]): Html {
  return html`<section class="code" id="${id}" data-code-table="${table}">
<h3><a class="self" href="#${id}">${id}</a></h3>
<dl>${facts.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>
</section>
`;
}

function requestCode(c: RequestErrorCode): Html {
  const e = REQUEST_ERRORS[c];
  return codeSection('request', c, [
    ['Status', `${e.status} ${STATUS_CODES[e.status] ?? ''}`.trim()],
    ['When', e.when],
    ['Retryable', e.retryable ? 'Yes' : 'No'],
    ['Retry advice', e.retry],
    ['Typical message', e.message],
  ]);
}

const IN_ERRORS = html`In <code>errors[]</code> of a 202 or 200 answer, or in <code>error.errors</code> of ${anchor('all_items_invalid')} and ${anchor('strict_item_invalid')}.`;
const IN_DROPPED = html`In <code>dropped[]</code> of a 202 answer, or as the <code>reason</code> of a dropped item in a 200 dry run.`;

/** The three code sections of the page: request errors, item errors, drop reasons. */
export function codeSections(): Html {
  const requestCodes = Object.keys(REQUEST_ERRORS) as RequestErrorCode[];
  const itemCodes = Object.keys(ITEM_ERRORS) as (keyof typeof ITEM_ERRORS)[];
  const dropCodes = Object.keys(DROP_REASONS) as DropReason[];
  return html`<section id="request-errors">
<h2>Request errors</h2>
<p>The whole request is refused with the status shown and the <a href="#error-envelope">error envelope</a>. Nothing of a refused request is stored.</p>
${requestCodes.map(requestCode)}</section>
<section id="item-errors">
<h2>Item errors</h2>
<p>One item is refused; the rest of the request goes on. None of these is worth retrying as is.</p>
${itemCodes.map((c) =>
  codeSection('item', c, [
    ['Reported', IN_ERRORS],
    ['When', ITEM_ERRORS[c].when],
    ['Retryable', 'No'],
    ['Retry advice', ITEM_ADVICE],
  ]),
)}</section>
<section id="drop-reasons">
<h2>Drop reasons</h2>
<p>The item was valid but a policy kept it from being stored. It is not metered.</p>
${dropCodes.map((c) =>
  codeSection('drop', c, [
    ['Reported', IN_DROPPED],
    ['When', DROP_REASONS[c].when],
    ['Retryable', 'No'],
    ['Retry advice', DROP_ADVICE[c]],
  ]),
)}</section>
`;
}
