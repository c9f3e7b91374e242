/**
 * The HTML reference of the batch API: the prose of docs/api.md rendered with
 * marked, its figures taken from the code (facts.ts), and the generated parts
 * (the order of checks, the limits, examples, one section per code) built here
 * from the code and the error table.
 */
import { readFileSync } from 'node:fs';
import { Marked, type Tokens } from 'marked';
import { DROP_REASONS, ITEM_ERRORS, REQUEST_ERRORS, type RequestErrorCode } from '../errors/codes.js';
import { CHECK_ORDER } from '../edge/intake-checks.js';
import { typesListed } from '../domain/ingest/item.js';
import { codeSections } from './code-sections.js';
import { acceptedDollarKeys, enrichmentKeys } from './dollar-keys.js';
import { segmentSection } from './segment-section.js';
import { postHogSection } from './posthog-section.js';
import { mixpanelSection } from './mixpanel-section.js';
import { amplitudeSection } from './amplitude-section.js';
import {
  BATCH_PATH,
  DEFAULT_POLICY_HEADER,
  DEFAULT_RETENTION_DAYS,
  IMPORT_PATH,
  IMPORT_POLICIES,
  IMPORT_POLICY_HEADER,
  DOCS_PATH,
  EXAMPLE_RATELIMIT_HEADER,
  FUTURE_MINUTES,
  KEY_POLICY_HEADER,
  KEY_PREFIX,
  KEY_RATELIMIT_HEADER,
  KEY_RETRY_AFTER,
  KEY_RPS,
  MAX_BODY_BYTES,
  MAX_INSERT_ID_LENGTH,
  MAX_KEY_LENGTH,
  MAX_ITEMS,
  MAX_NAME_LENGTH,
  MAX_PROPERTY_BYTES,
  MAX_PROPERTY_DEPTH,
  MAX_PROPERTY_KEYS,
  OPENAPI_PATH,
  PAST_DAYS,
  REFERENCE_SCRIPT_PATH,
  POLICIES,
  formatNumber,
} from './facts.js';
import { Html, anchor, code, html, table } from './html.js';

/** Where the prose lives: docs/api.md at the repository's root, two folders up from src/docs and dist/docs. */
const PROSE_FILE = new URL('../../docs/api.md', import.meta.url);

const STYLE = `
body{font:16px/1.55 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d232a;background:#fff;margin:0}
header,main{max-width:54rem;margin:0 auto;padding:0 1.25rem}
header{padding-top:2rem;border-bottom:1px solid #dde2e7}
h1{font-size:1.9rem;margin:0 0 .25rem}h2{font-size:1.4rem;margin-top:2.5rem;border-bottom:1px solid #dde2e7;padding-bottom:.2rem}
h3{font-size:1.1rem;margin:1.6rem 0 .4rem}
code,pre{font:.9em/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f3f5f7;border-radius:3px}
code{padding:.05em .3em}pre{padding:.8rem 1rem;overflow-x:auto}pre code{padding:0;background:none}
table{border-collapse:collapse;width:100%;margin:.8rem 0;font-size:.95em}
th,td{border:1px solid #dde2e7;padding:.35rem .55rem;text-align:left;vertical-align:top}th{background:#f3f5f7}
nav ol{columns:2;padding-left:1.2rem}a{color:#0b5cad}
section.code{border-left:3px solid #dde2e7;padding-left:.9rem;margin:1.2rem 0}
section.code:target{border-left-color:#0b5cad;background:#f5f9fd}
#code-index h3{font-size:1rem;margin:1rem 0 .3rem}#code-index ul{list-style:none;padding:0;margin:0;display:flex;flex-wrap:wrap;gap:.25rem .9rem}
#code-index li{font-size:.92em}#code-index .status{color:#5c6670}
form.filter{margin:1.2rem 0 .6rem;display:flex;flex-wrap:wrap;gap:.4rem .8rem;align-items:center}
form.filter input{font:inherit;padding:.35rem .5rem;border:1px solid #aab4be;border-radius:4px;min-width:min(100%,20rem)}
form.filter p{margin:0;color:#5c6670;font-size:.92em}
[hidden]{display:none!important}
a.self{color:inherit;text-decoration:none;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
dl{display:grid;grid-template-columns:9.5rem 1fr;gap:.2rem .8rem;margin:.4rem 0}dt{font-weight:600}dd{margin:0}
.note{background:#fff8e1;border-left:3px solid #e0b000;padding:.5rem .8rem}
footer{max-width:54rem;margin:3rem auto 2rem;padding:0 1.25rem;color:#5c6670;font-size:.9em}
`;

const EXAMPLE_REQUEST_ID = 'req_3fZ9aQ1xLm0bT7Kc';

// "## Title {#id}" gives the heading that id; the anchors of the page are ours, never generated from titles.
const markdown = new Marked({ gfm: true }).use({
  renderer: {
    heading({ tokens, depth }: Tokens.Heading): string {
      const inner = this.parser.parseInline(tokens);
      const m = /^(.*?)\s*\{#([a-z0-9-]+)\}$/.exec(inner);
      return m ? `<h${depth} id="${m[2]}">${m[1]}</h${depth}>\n` : `<h${depth}>${inner}</h${depth}>\n`;
    },
  },
});

const pre = (text: string): Html => html`<pre><code>${text}</code></pre>`;
const json = (value: unknown): Html => pre(JSON.stringify(value, null, 2));
const inline = (md: string): Html => new Html(markdown.parseInline(md) as string);

/** Figures the prose names as {{NAME}}, as they read on the page. */
function figures(baseUrl: string): Map<string, string> {
  return new Map([
    ['BASE_URL', urlText(baseUrl)],
    ['BATCH_PATH', BATCH_PATH],
    ['IMPORT_PATH', IMPORT_PATH],
    ['IMPORT_POLICY_HEADER', IMPORT_POLICY_HEADER],
    ['IMPORT_QUOTA', formatNumber(IMPORT_POLICIES[0]!.quota)],
    ['IMPORT_WINDOW_SECONDS', String(IMPORT_POLICIES[0]!.windowSeconds)],
    ['IMPORT_RETRY_AFTER', String(IMPORT_POLICIES[0]!.retryAfter)],
    ['IMPORT_LIMIT_ENV', IMPORT_POLICIES[0]!.env],
    ['DEFAULT_RETENTION_DAYS', String(DEFAULT_RETENTION_DAYS)],
    ['OPENAPI_PATH', OPENAPI_PATH],
    ['KEY_PREFIX', KEY_PREFIX],
    ['MAX_ITEMS', String(MAX_ITEMS)],
    ['MAX_BODY', `1 MiB (${formatNumber(MAX_BODY_BYTES)} bytes)`],
    ['MAX_NAME_LENGTH', String(MAX_NAME_LENGTH)],
    ['MAX_INSERT_ID_LENGTH', String(MAX_INSERT_ID_LENGTH)],
    ['MAX_KEY_LENGTH', String(MAX_KEY_LENGTH)],
    ['PAST_DAYS', String(PAST_DAYS)],
    ['FUTURE_MINUTES', String(FUTURE_MINUTES)],
    ['MAX_PROPERTY_KEYS', String(MAX_PROPERTY_KEYS)],
    ['MAX_PROPERTY_DEPTH', String(MAX_PROPERTY_DEPTH)],
    ['MAX_PROPERTY_BYTES', formatNumber(MAX_PROPERTY_BYTES)],
    ['MAX_PROPERTY_KIB', String(MAX_PROPERTY_BYTES / 1024)],
    ['KEY_RPS', String(KEY_RPS)],
    ['DEFAULT_POLICY_HEADER', DEFAULT_POLICY_HEADER],
    ['EXAMPLE_RATELIMIT_HEADER', EXAMPLE_RATELIMIT_HEADER],
    ['KEY_POLICY_HEADER', KEY_POLICY_HEADER],
    ['KEY_RATELIMIT_HEADER', KEY_RATELIMIT_HEADER],
    ['ENRICHMENT_KEYS', enrichmentKeys().map((k) => `\`${k}\``).join(', ')],
    ['ITEM_TYPES', typesListed((t) => `\`${t}\``, 'or')],
  ]);
}

function checkOrder(): Html {
  const rows = CHECK_ORDER.map((s, i) => [String(i + 1), inline(s.check), s.codes.map((c, j) => html`${j === 0 ? '' : ' / '}${anchor(c)}`)]);
  rows.push([String(CHECK_ORDER.length + 1), 'Otherwise', html`202, or 200 with <code>validate=true</code>`]);
  return table(['Step', 'Check', 'Answer'], rows);
}

function rateLimits(): Html {
  const rows = [...POLICIES, ...IMPORT_POLICIES].map((p) => [code(p.name), `${formatNumber(p.quota)} items per ${p.windowSeconds} s`, `Retry-After: ${p.retryAfter}`, code(p.env)]);
  rows.push([html`per key`, `${KEY_RPS} requests per 1 s`, `Retry-After: ${KEY_RETRY_AFTER}`, code('INLET_LIMIT_KEY_RPS')]);
  return table(['Policy', 'Limit', 'When tripped', 'Setting'], rows);
}

const EXAMPLE_202 = {
  accepted: 2,
  dropped: [{ index: 3, reason: 'bot_filtered' }],
  errors: [{ index: 1, code: 'invalid_reserved_property', field: 'properties.$currency', message: '"$currency" must be an ISO 4217 currency code in upper case, such as "EUR" or "USD".' }],
  duplicates: [2],
  request_id: EXAMPLE_REQUEST_ID,
};

const EXAMPLE_DRY_RUN = {
  items: [
    {
      index: 0,
      type: 'track',
      outcome: 'accepted',
      reason: null,
      event_id: '019a5b6e-2c40-7d1e-9f3a-5b8c2d4e6f70',
      event: 'invoice_paid',
      distinct_id: 'usr_1042',
      anonymous_id: null,
      person: { id: 'per_7Qm2Lx9Ta4Vb1Nc8Rd3Ke0', new: false },
      session: { id: null, server_session: true },
      insert_id: 'inv_88213_paid',
      timestamp: '2026-11-22T12:00:00.000Z',
      properties: { $revenue: 49, $currency: 'EUR' },
      enrichment: { $source_id: 'src_8Hd2Kq0Zr5Wm3Ty1' },
      dropped_keys: ['properties.$lib'],
    },
  ],
  errors: [],
  dropped_keys: [],
  request_id: EXAMPLE_REQUEST_ID,
};

/** The generated parts the prose places as {{block:name}}. */
function blocks(baseUrl: string): Map<string, Html> {
  const envelope = {
    error: { code: 'missing_key', message: REQUEST_ERRORS.missing_key.message, docs_url: `${baseUrl}${DOCS_PATH}#missing_key`, request_id: EXAMPLE_REQUEST_ID },
  };
  return new Map([
    ['dollar-keys', table(['Key', 'Value'], acceptedDollarKeys().map((k) => [code(k.key), k.note]))],
    ['example-202', json(EXAMPLE_202)],
    ['example-dry-run', json(EXAMPLE_DRY_RUN)],
    ['example-envelope', json(envelope)],
    ['check-order', checkOrder()],
    ['rate-limits', rateLimits()],
    ['segment', segmentSection(baseUrl)],
    ['posthog', postHogSection(baseUrl)],
    ['mixpanel', mixpanelSection(baseUrl)],
    ['amplitude', amplitudeSection(baseUrl)],
    ['code-sections', codeSections()],
  ]);
}

/** The operator's base URL as the prose may hold it: characters a URL never needs raw are percent-encoded, so no markup comes through. */
function urlText(url: string): string {
  return url.replace(/[<>"'`\s]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`);
}

/** docs/api.md with its figures filled in and its blocks generated, as HTML. */
export function referenceBody(baseUrl: string, prose = readFileSync(PROSE_FILE, 'utf8')): string {
  const values = figures(baseUrl);
  // The file's opening comment is for its editors, not for the page.
  const filled = prose.replace(/^\s*<!--[\s\S]*?-->\s*/, '').replace(/\{\{([A-Z_]+)\}\}/g, (_, name: string) => {
    const v = values.get(name);
    if (v === undefined) throw new Error(`docs/api.md names {{${name}}}, which is not a known figure.`);
    return v;
  });
  const parts = blocks(baseUrl);
  return (markdown.parse(filled) as string).replace(/<p>\{\{block:([a-z0-9-]+)\}\}<\/p>/g, (_, name: string) => {
    const b = parts.get(name);
    if (b === undefined) throw new Error(`docs/api.md places {{block:${name}}}, which is not a known block.`);
    return b.value;
  });
}

/** The contents: every second-level heading with an id, in page order. */
function contents(body: string): Html {
  const entries = [...body.matchAll(/<h2 id="([^"]+)">(.*?)<\/h2>|<section id="([^"]+)">\s*<h2>(.*?)<\/h2>/g)].map((m) => ({
    id: m[1] ?? m[3]!,
    title: new Html(m[2] ?? m[4]!),
  }));
  return html`<nav aria-label="Contents"><ol>${entries.map((e) => html`<li><a href="#${e.id}">${e.title}</a></li>`)}</ol></nav>`;
}

/** Every code of the three tables, each linked to its section: what a reader looking for one code scans first. */
function codeIndex(): Html {
  const requestCodes = Object.keys(REQUEST_ERRORS) as RequestErrorCode[];
  const entry = (c: string, note?: string) => html`<li><a href="#${c}"><code>${c}</code></a>${note === undefined ? '' : html` <span class="status">${note}</span>`}</li>`;
  return html`<nav aria-labelledby="code-index-h" id="code-index">
<h2 id="code-index-h">Every code</h2>
<h3>Request errors</h3><ul>${requestCodes.map((c) => entry(c, String(REQUEST_ERRORS[c].status)))}</ul>
<h3>Item errors</h3><ul>${Object.keys(ITEM_ERRORS).map((c) => entry(c))}</ul>
<h3>Drop reasons</h3><ul>${Object.keys(DROP_REASONS).map((c) => entry(c))}</ul>
</nav>`;
}

/** The filter box: shown by the page's script (without it the whole page reads as is). */
const FILTER = html`<form class="filter" role="search" hidden>
<label for="filter">Filter the page</label>
<input id="filter" type="search" placeholder="a code, a header, a word" autocomplete="off" spellcheck="false">
<p id="filter-status" role="status"></p>
</form>`;

/** Builds the whole reference page for a deployment at `baseUrl`. */
export function referencePage(baseUrl: string): string {
  const body = new Html(referenceBody(baseUrl));
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Inlet batch API reference</title>
<style>${new Html(STYLE)}</style>
<script src="${REFERENCE_SCRIPT_PATH}" defer></script>
</head>
<body>
<header>
<h1>Inlet batch API</h1>
<p>Reference for <code>POST ${baseUrl}${BATCH_PATH}</code>, version 1.</p>
${FILTER}
${contents(body.value)}
${codeIndex()}
</header>
<main>
${body}
</main>
<footer>Within v1, changes only add: new optional fields, new item types, new codes. Codes on this page are stable; messages are not.</footer>
</body>
</html>
`.value;
}
