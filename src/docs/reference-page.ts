/**
 * The HTML reference of the batch API. Prose is ours; figures come from the
 * code (facts.ts) and the per-code sections from the error table.
 */
import { REQUEST_ERRORS } from '../errors/codes.js';
import { codeSections } from './code-sections.js';
import { acceptedDollarKeys, enrichmentKeys } from './dollar-keys.js';
import { SEGMENT_SECTION, segmentSection } from './segment-section.js';
import {
  BATCH_PATH,
  DEFAULT_POLICY_HEADER,
  DOCS_PATH,
  EXAMPLE_RATELIMIT_HEADER,
  FUTURE_MINUTES,
  KEY_PREFIX,
  KEY_RETRY_AFTER,
  KEY_RPS,
  MAX_BODY_BYTES,
  MAX_INSERT_ID_LENGTH,
  MAX_ITEMS,
  MAX_NAME_LENGTH,
  MAX_PROPERTY_BYTES,
  MAX_PROPERTY_DEPTH,
  MAX_PROPERTY_KEYS,
  MAX_KEY_LENGTH,
  OPENAPI_PATH,
  PAST_DAYS,
  POLICIES,
  formatNumber,
} from './facts.js';
import { Html, anchor, code, html, table } from './html.js';

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
a.self{color:inherit;text-decoration:none;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
dl{display:grid;grid-template-columns:9.5rem 1fr;gap:.2rem .8rem;margin:.4rem 0}dt{font-weight:600}dd{margin:0}
.note{background:#fff8e1;border-left:3px solid #e0b000;padding:.5rem .8rem}
footer{max-width:54rem;margin:3rem auto 2rem;padding:0 1.25rem;color:#5c6670;font-size:.9em}
`;

const CONTENTS: [string, string][] = [
  ['overview', 'What the endpoint does'],
  ['authentication', 'Authentication'],
  ['request', 'Request format'],
  ['query', 'Query parameters'],
  ['answers', 'Answers'],
  ['error-envelope', 'Error envelope'],
  ['check-order', 'Order of checks'],
  ['rate-limits', 'Rate limits'],
  ['idempotency', 'Idempotency'],
  ['retries', 'Retrying'],
  SEGMENT_SECTION,
  ['request-errors', 'Request errors'],
  ['item-errors', 'Item errors'],
  ['drop-reasons', 'Drop reasons'],
];

const pre = (text: string): Html => html`<pre><code>${text}</code></pre>`;
const json = (value: unknown): Html => pre(JSON.stringify(value, null, 2));
const MIB = `1 MiB (${formatNumber(MAX_BODY_BYTES)} bytes)`;

function overview(baseUrl: string): Html {
  return html`<section id="overview">
<h2>What the endpoint does</h2>
<p>Inlet takes analytics from your own back end: billing runs, renewals, exports, scheduled jobs, anything that happens without a browser.
Everything goes through one endpoint, <code>POST ${baseUrl}${BATCH_PATH}</code>, as a batch of up to ${MAX_ITEMS} items.
An item is either a <code>track</code>, which records one event, or an <code>identify</code>, which sets traits on a person.</p>
<ul>
<li>No event has to be declared beforehand; a valid name you send is a name stored.</li>
<li>Items are judged one at a time. The good ones are kept even when others in the same batch are refused, and the answer names each refused item by its position.</li>
<li>Events land on the same people as browser events: a <code>distinct_id</code> that a browser has already identified with joins that person.</li>
<li>Each stored <code>track</code> counts once toward the project's monthly event total; <code>identify</code> items are never counted.</li>
<li>The API is switched on project by project. Until it is, its keys get ${anchor('not_found')}. It is served on the app host only; custom tracker domains carry browser traffic and answer 404 here.</li>
</ul>
<p>A machine-readable description is at <a href="${OPENAPI_PATH}">${OPENAPI_PATH}</a> (OpenAPI 3.1).</p>
${pre(`curl ${baseUrl}${BATCH_PATH} \\
  -H "Authorization: Bearer $INLET_SERVER_KEY" \\
  -H "Content-Type: application/json" \\
  -d '{"items": [{"event": "invoice_paid", "distinct_id": "usr_1042", "insert_id": "inv_88213_paid"}]}'`)}
</section>
`;
}

function authentication(): Html {
  return html`<section id="authentication">
<h2>Authentication</h2>
<p>Send a server key on every request: <code>Authorization: Bearer ${KEY_PREFIX}…</code>. The scheme name is case-insensitive.
A key starts with <code>${KEY_PREFIX}</code>, is tied to a single server source and can only write to that source.
It is shown in full once, when it is made; afterwards only its prefix, its last four characters and when it was last used are visible.
Treat it as a password: keep it out of source code and out of event properties.</p>
<ul>
<li>No <code>Authorization</code> header, or a scheme other than Bearer: ${anchor('missing_key')}.</li>
<li>A key that is unknown, revoked or expired, or whose source, project or organization was deleted: ${anchor('invalid_key')}. Revoking works from the very next request.</li>
<li>A source can hold two active keys, so a key can be rolled: the new one works at once and the old one keeps working for the grace period chosen (none, 24 hours or 7 days).</li>
</ul>
<h3>Browsers are refused</h3>
<p>Server keys must never reach a browser, so a request that looks like it comes from one is refused with ${anchor('browser_not_allowed')}:
it has an <code>Origin</code> header, or any <code>Sec-Fetch-*</code> header. No answer of this API carries <code>Access-Control-*</code> headers, so a browser page could not read an answer anyway.</p>
<p class="note">One exception: a request with no <code>Origin</code> whose only <code>Sec-Fetch-*</code> header is <code>Sec-Fetch-Mode: cors</code> is let through.
The <code>fetch</code> built into Node.js (undici, Node 18 and later) adds exactly that header to every request, even from a server.
A browser never sends it alone: it adds <code>Origin</code> to every POST and <code>Sec-Fetch-Site</code> next to the other <code>Sec-Fetch-*</code> headers.
Refusing it would shut out the most common HTTP client on Node servers.</p>
</section>
`;
}

function itemFields(): Html {
  return table(
    ['Field', 'Type', 'Required', 'Rule'],
    [
      [code('type'), 'string', 'no', html`<code>track</code> (the default) or <code>identify</code>. <code>group</code> and <code>alias</code> are reserved for later and refused for now.`],
      [code('event'), 'string', 'on track', html`${MAX_NAME_LENGTH} characters at most, not blank, no control characters. Names starting with <code>$</code> are Inlet's own, except <code>$agent_step</code> and <code>$agent_run</code>; so are <code>identify</code>, <code>alias</code>, <code>group</code> and <code>merge</code> in any case. Ignored on identify.`],
      [code('distinct_id'), 'string', 'on identify; on track unless anonymous_id is sent', html`Your user id: 1 to ${MAX_NAME_LENGTH} characters, no control characters. Placeholders that betray a client bug (<code>undefined</code>, <code>null</code>, <code>nil</code>, <code>none</code>, <code>nan</code>, <code>0</code>, <code>-1</code>, <code>[object Object]</code>, <code>anonymous</code>, <code>guest</code>, in any case) are refused, since one of them would fold thousands of users into one person. Use an opaque id; keep e-mail addresses and names for identify traits.`],
      [code('anonymous_id'), 'string', 'no', html`A browser person key, <code>per_</code> followed by letters, digits, <code>_</code> or <code>-</code>. The event then belongs to that browser's person. On identify it links the <code>distinct_id</code> to that person.`],
      [code('session_id'), 'string', 'no', html`A browser session id, <code>ses_…</code>, to join that session. Without it the event goes into the person's server session, which session counts leave out.`],
      [code('insert_id'), 'string', 'no, but strongly advised', html`1 to ${MAX_INSERT_ID_LENGTH} characters of <code>A-Z a-z 0-9 _ -</code>. See <a href="#idempotency">idempotency</a>.`],
      [code('timestamp'), 'string or integer', 'no', html`ISO 8601 with a date, a time and an offset (<code>Z</code> or <code>±hh:mm</code>), or an integer of epoch milliseconds. Must lie between ${PAST_DAYS} days before and ${FUTURE_MINUTES} minutes after the server clock on arrival. Left out, the arrival time is used.`],
      [code('properties'), 'object', 'no', html`Event properties, or on identify the person's traits. See below.`],
    ],
  );
}

function request(): Html {
  const dollarRows = acceptedDollarKeys().map((k) => [code(k.key), k.note]);
  return html`<section id="request">
<h2>Request format</h2>
<h3>Headers</h3>
<ul>
<li><code>Authorization: Bearer ${KEY_PREFIX}…</code>, always.</li>
<li><code>Content-Type: application/json</code>, always; <code>charset=utf-8</code> may follow, no other charset.</li>
<li><code>Content-Encoding: gzip</code> for a compressed body; <code>identity</code> or no header for a plain one.</li>
</ul>
<h3>Body</h3>
<p>A JSON object with one field, <code>items</code>: an array of 1 to ${MAX_ITEMS} item objects. Other top-level fields are ignored.
The body may be at most ${MIB}, both as sent and, when gzipped, once decompressed.</p>
<h3>Items</h3>
${itemFields()}
<p>Lengths count Unicode code points. Strings are kept exactly as sent, but none may hold U+0000 or a lone surrogate, anywhere in the item (property keys and values included): no store can keep them. What passes these checks is stored, so a <code>503</code> is only ever an outage, never the content of a batch.
A JSON <code>null</code> in an optional field counts as leaving it out, and fields Inlet does not know are ignored.
An item can fail on several fields at once; each fault is reported on its own.</p>
<h3>Properties</h3>
<p>Properties are first normalised: the server's own keys are taken out, <code>$user_agent</code> is read and removed, and <code>$ip</code> is removed unless the source records IP addresses. What is left must have:</p>
<ul>
<li>at most ${MAX_PROPERTY_KEYS} top-level keys;</li>
<li>keys of at most ${MAX_KEY_LENGTH} characters, at every depth (a trait key is part of an index, and every store must be able to keep it);</li>
<li>a nesting depth of at most ${MAX_PROPERTY_DEPTH}, counting the properties object as level 1 and each object or array inside it as one more;</li>
<li>at most ${formatNumber(MAX_PROPERTY_BYTES)} bytes (${MAX_PROPERTY_BYTES / 1024} KiB) as UTF-8 JSON;</li>
<li>only numbers that survive exactly: send integers beyond ±(2<sup>53</sup>−1) as strings.</li>
</ul>
<p>Keys starting with <code>$</code> are Inlet's. These are accepted:</p>
${table(['Key', 'Value'], dollarRows)}
<p>These are set by the server and removed without complaint if you send them: ${enrichmentKeys().map((k, i) => html`${i === 0 ? '' : ', '}${code(k)}`)}.
Any other <code>$</code> key is refused with ${anchor('reserved_property')}, and an accepted one with a malformed value with ${anchor('invalid_reserved_property')}.</p>
</section>
`;
}

function query(): Html {
  return html`<section id="query">
<h2>Query parameters</h2>
${table(
  ['Parameter', 'Effect of true'],
  [
    [code('validate'), html`A dry run. Every check runs and the answer is 200 with what each valid item would become (see <a href="#answers">answers</a>), but nothing is stored or metered. It still counts toward the rate limits.`],
    [code('strict'), html`All or nothing: if any item is invalid, nothing is stored and the answer is ${anchor('strict_item_invalid')} listing the invalid items. Combined with <code>validate=true</code> the dry run is refused the same way.`],
  ],
)}
<p>Each takes <code>true</code> or <code>false</code> and may appear once. Any other parameter, a repeat, or another value gives ${anchor('invalid_query')}.</p>
</section>
`;
}

function answers(baseUrl: string): Html {
  return html`<section id="answers">
<h2>Answers</h2>
<h3>202 Accepted</h3>
<p>Sent when at least one item was accepted or dropped by policy. By then every accepted item is durably stored.
If every item was refused the answer is ${anchor('all_items_invalid')} instead.</p>
${table(
  ['Field', 'Meaning'],
  [
    [code('accepted'), 'How many items were kept, including repeats of an insert_id stored before.'],
    [code('dropped'), html`<code>{index, reason}</code> for each valid item a policy kept out; reasons are listed under <a href="#drop-reasons">drop reasons</a>.`],
    [code('errors'), html`<code>{index, code, field, message}</code> for each fault of each refused item; <code>field</code> is the path inside the item, such as <code>properties.$currency</code>. Codes are under <a href="#item-errors">item errors</a>.`],
    [code('duplicates'), html`Indices of items whose <code>insert_id</code> was already stored: counted in <code>accepted</code>, not stored twice.`],
    [code('request_id'), html`The id of this request, also sent as the <code>Request-Id</code> header. Quote it to support.`],
  ],
)}
${json({
  accepted: 2,
  dropped: [{ index: 3, reason: 'bot_filtered' }],
  errors: [{ index: 1, code: 'invalid_reserved_property', field: 'properties.$currency', message: '"$currency" must be an ISO 4217 currency code in upper case, such as "EUR" or "USD".' }],
  duplicates: [2],
  request_id: 'req_3fZ9aQ1xLm0bT7Kc',
})}
<h3>200 OK, with validate=true</h3>
<p>The dry-run answer has <code>items</code>, one entry per valid item, then <code>errors</code> as above, <code>dropped_keys</code> (top-level body fields that were ignored) and <code>request_id</code>.
It is 200 even when no item is valid. Each entry of <code>items</code> shows the item as it would be stored:</p>
${table(
  ['Field', 'Meaning'],
  [
    [code('index'), 'Position in the batch.'],
    [code('type'), html`<code>track</code> or <code>identify</code>.`],
    [code('outcome'), html`<code>accepted</code>, <code>duplicate</code> (its insert_id is already stored) or <code>dropped</code>.`],
    [code('reason'), html`The drop reason when dropped, else <code>null</code>.`],
    [code('event_id'), html`The id the event would get; <code>null</code> when dropped.`],
    [html`${code('event')}, ${code('distinct_id')}, ${code('anonymous_id')}, ${code('insert_id')}`, html`As read from the item, <code>null</code> when absent.`],
    [code('person'), html`<code>{id, new}</code>: the person it resolves to and whether that person would be created; <code>null</code> unless accepted.`],
    [code('session'), html`<code>{id, server_session}</code> for a track; <code>null</code> for identify.`],
    [code('timestamp'), 'The time that would be stored, in ISO 8601 UTC.'],
    [code('properties'), 'Properties or traits after normalisation.'],
    [code('enrichment'), html`What the server would add, such as <code>$source_id</code> and what the user agent yields.`],
    [code('dropped_keys'), html`Paths of what was sent but would not be stored, such as <code>properties.$lib</code> or an unknown item field.`],
  ],
)}
${json({
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
  request_id: 'req_3fZ9aQ1xLm0bT7Kc',
})}
<p>Clients should ignore fields they do not know: new ones may appear within v1.</p>
</section>
<section id="error-envelope">
<h2>Error envelope</h2>
<p>Every answer outside 2xx has the same body. <code>code</code> is stable and is what to match on; <code>message</code> says what to change and its wording may change.
<code>docs_url</code> links to the code's section on this page. For ${anchor('all_items_invalid')} and ${anchor('strict_item_invalid')}, <code>error.errors</code> lists the item errors in the same form as in a 202.</p>
${json({
  error: {
    code: 'missing_key',
    message: REQUEST_ERRORS.missing_key.message,
    docs_url: `${baseUrl}${DOCS_PATH}#missing_key`,
    request_id: 'req_3fZ9aQ1xLm0bT7Kc',
  },
})}
<p>Every answer, error or not, carries a <code>Request-Id</code> header equal to the body's <code>request_id</code>.</p>
</section>
`;
}

// Decisions §1: a request is answered with the first check it fails.
const CHECKS: [Html | string, Html][] = [
  [html`The request is not valid HTTP/1.1 (no <code>Host</code> or two, two <code>Content-Length</code>s or one with <code>Transfer-Encoding</code>, an unknown method), its headers are over 16 KiB, or it did not arrive in full within 30 s`, html`${anchor('bad_request')} / ${anchor('headers_too_large')} / ${anchor('request_timeout')}`],
  [html`The path is not <code>${BATCH_PATH}</code> (an unknown <code>/api/v1/…</code> path or an unknown version), or the host is a tracker domain`, anchor('not_found')],
  ['The path is under a retired API version', anchor('api_version_retired')],
  ['The method is not POST (OPTIONS included)', anchor('method_not_allowed')],
  [html`It looks like a browser: <code>Origin</code>, or <code>Sec-Fetch-*</code> other than a lone <code>Sec-Fetch-Mode: cors</code>`, anchor('browser_not_allowed')],
  ['No Bearer key', anchor('missing_key')],
  ['The key does not work', anchor('invalid_key')],
  ["The key's project does not have the API switched on", anchor('not_found')],
  [`The key sent more than ${KEY_RPS} requests in the last second (by default)`, anchor('rate_limited')],
  ['A query parameter is unknown, repeated, or not true/false', anchor('invalid_query')],
  ['Content-Type is not JSON', anchor('unsupported_media_type')],
  ['Content-Encoding is not gzip or identity', anchor('unsupported_encoding')],
  [`The body is over ${MIB}, as sent or decompressed`, anchor('payload_too_large')],
  ["No room to read the body: the server's budget for bodies being read, or the key's share of it, is spent (checked against Content-Length before a byte is read, and as a chunked body arrives); the connection is closed", anchor('collection_unavailable')],
  ['The body is not UTF-8 JSON, or the gzip stream is broken', anchor('invalid_json')],
  [html`The body is not an object with an <code>items</code> array`, anchor('invalid_body')],
  [`items is empty, or holds more than ${MAX_ITEMS}`, html`${anchor('batch_empty')} / ${anchor('batch_too_many_items')}`],
  ["The items would overflow one of the project's windows", anchor('rate_limited')],
  ['Items are checked; with strict=true any invalid item, else all of them invalid', html`${anchor('strict_item_invalid')} / ${anchor('all_items_invalid')}`],
  ['The durable write fails', anchor('collection_unavailable')],
  ['Otherwise', html`202, or 200 with <code>validate=true</code>`],
];

function checkOrder(): Html {
  return html`<section id="check-order">
<h2>Order of checks</h2>
<p>A request is answered with the first check it fails; later checks do not run. In particular the key is checked before anything about the body, and the body is not read before the headers pass.</p>
${table(['Step', 'Check', 'Answer'], CHECKS.map(([check, answer], i) => [String(i + 1), check, answer]))}
</section>
`;
}

function rateLimits(): Html {
  const rows = POLICIES.map((p) => [
    code(p.name),
    `${formatNumber(p.quota)} items per ${p.windowSeconds} s`,
    `Retry-After: ${p.retryAfter}`,
    code(p.env),
  ]);
  rows.push([html`per key`, `${KEY_RPS} requests per 1 s`, `Retry-After: ${KEY_RETRY_AFTER}`, code('INLET_LIMIT_KEY_RPS')]);
  return html`<section id="rate-limits">
<h2>Rate limits</h2>
<p>Item limits are counted per project over every item of a request, valid or not, in sliding windows. A request fits whole or is refused whole with ${anchor('rate_limited')}; a refused request adds nothing to the windows, and nothing of it is stored or metered, so sending it again later is safe.
Requests are also limited per key. The defaults:</p>
${table(['Policy', 'Limit', 'When tripped', 'Setting'], rows)}
<p>Whoever runs Inlet can change these numbers with the settings shown; <code>0</code> turns a limit off. The headers always state the numbers in force.
Servers of one deployment that share a Redis count together; a server without one counts alone, so a sender spread over several such servers may briefly go over.</p>
<p>Every answer given once the project windows have been checked carries the IETF RateLimit header fields: the 202, the 200 dry run, a 429 from a project window, and the item-level 400s and the 503 that can follow. With the defaults:</p>
${pre(`RateLimit-Policy: ${DEFAULT_POLICY_HEADER}
RateLimit: ${EXAMPLE_RATELIMIT_HEADER}`)}
<p>In <code>RateLimit</code>, <code>r</code> is how many items each window still takes and <code>t</code> the seconds until its oldest count leaves it.
A 429 from the per-key limit does not carry them.</p>
</section>
`;
}

function idempotency(): Html {
  return html`<section id="idempotency">
<h2>Idempotency</h2>
<ul>
<li>Give every item an <code>insert_id</code> that is unique within the source, such as an invoice or job id, and keep it the same on every retry.</li>
<li>An item whose <code>insert_id</code> is already stored for the source is answered as accepted, listed in <code>duplicates</code> and not stored or metered again. This holds for concurrent requests and across servers.</li>
<li>The same <code>insert_id</code> twice in one request is a sender bug: the later item is refused with ${anchor('duplicate_insert_id')}.</li>
<li><code>properties.$insert_id</code> serves as the <code>insert_id</code> when that field is absent.</li>
<li>Without an <code>insert_id</code>, a retry after a lost answer can store an event twice.</li>
<li>A 202 means every accepted item is committed to durable storage. A request's items are written all together or not at all: ${anchor('collection_unavailable')} means none of it was kept.</li>
</ul>
</section>
`;
}

function retries(): Html {
  return html`<section id="retries">
<h2>Retrying</h2>
<ul>
<li>Retry on network failures and timeouts, on 408, on 429 and on 5xx answers.</li>
<li>Back off exponentially, with some jitter, up to about 30 seconds between attempts; when the answer has <code>Retry-After</code>, wait at least that long.</li>
<li>Resend the same batch with the same <code>insert_id</code> values, so nothing is stored twice.</li>
<li>Do not retry other 4xx answers or item errors unchanged: they fail again until fixed. On ${anchor('payload_too_large')} or ${anchor('batch_too_many_items')}, split the batch.</li>
<li>Dropped items are not failures; resending them changes nothing.</li>
</ul>
</section>
`;
}

/** Builds the whole reference page for a deployment at `baseUrl`. */
export function referencePage(baseUrl: string): string {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Inlet batch API reference</title>
<style>${new Html(STYLE)}</style>
</head>
<body>
<header>
<h1>Inlet batch API</h1>
<p>Reference for <code>POST ${baseUrl}${BATCH_PATH}</code>, version 1.</p>
<nav aria-label="Contents"><ol>${CONTENTS.map(([id, title]) => html`<li><a href="#${id}">${title}</a></li>`)}</ol></nav>
</header>
<main>
${overview(baseUrl)}${authentication()}${request()}${query()}${answers(baseUrl)}${checkOrder()}${rateLimits()}${idempotency()}${retries()}${segmentSection(baseUrl)}${codeSections()}
</main>
<footer>Within v1, changes only add: new optional fields, new item types, new codes. Codes on this page are stable; messages are not.</footer>
</body>
</html>
`.value;
}
