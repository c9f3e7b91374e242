/** The reference page's section on the Mixpanel-compatible endpoints; the paths come from the route's own table. */
import { MAX_MESSAGES, MIXPANEL_PATHS } from '../intakes/mixpanel/mixpanel-map.js';
import { BATCH_PATH, IMPORT_PATH } from './facts.js';
import { Html, anchor, code, html, table } from './html.js';

/** What each message becomes, as the mapping does it. */
const MESSAGES: [string, Html | string][] = [
  ['/track, /import: an event', html`a <code>track</code> item: <code>properties.distinct_id</code> (or <code>$user_id</code>) its <code>distinct_id</code>, <code>$device_id</code> its <code>anonymous_id</code> when it is a browser person key (else its <code>distinct_id</code> when there is none), <code>time</code> (seconds or milliseconds) its <code>timestamp</code>, <code>$insert_id</code> its <code>insert_id</code>, the other properties its properties`],
  ['/track: $create_alias', html`an <code>alias</code> item: <code>properties.alias</code> is its <code>previous_id</code>`],
  ['/engage: $set, $set_once, $unset', html`an <code>identify</code> item of <code>$distinct_id</code>: <code>$set</code> its traits, <code>$set_once</code> its <code>set_once</code>, <code>$unset</code> its <code>unset</code>; Mixpanel's <code>$email</code>, <code>$phone</code>, <code>$name</code>, <code>$first_name</code>, <code>$last_name</code>, <code>$avatar</code> and <code>$created</code> are the traits without the <code>$</code>`],
  ['/engage: $add, $append, $union, $remove, $delete', html`refused with ${anchor('unsupported_operation')}: a person's traits are set, set once or unset, never added to`],
  ['/groups: $set', html`a <code>group</code> item: <code>$group_key</code> its <code>group_type</code>, <code>$group_id</code> its <code>group_key</code>, <code>$set</code> its traits; any other operation is refused with ${anchor('unsupported_operation')}`],
];

/** The paths as the page lists them: each once, without its trailing slash. */
export function mixpanelPathList(): string[] {
  return [...MIXPANEL_PATHS.keys()].filter((p) => !p.endsWith('/'));
}

export function mixpanelSection(baseUrl: string): Html {
  return html`<section id="mixpanel">
<h2>Mixpanel-compatible endpoints</h2>
<p>Code written for the <code>mixpanel</code> SDKs, or for Mixpanel's ingestion API, works by pointing its host at <code>${baseUrl}</code>:
${mixpanelPathList().map((p, i) => html`${i === 0 ? '' : ', '}<code>${p}</code>`)} (the trailing slash is optional) take Mixpanel's messages on the same server, with the same key, limits and checks as ${code(BATCH_PATH)}; <code>/import</code> takes historical events as ${code(IMPORT_PATH)} does.</p>
<ul>
<li>The key: an Inlet server key where the SDK puts its project token, <code>properties.token</code> of an event or <code>$token</code> of a people or group update (of the first message), or as the HTTP Basic user name (<code>/import</code>'s way). Such a body is read in the pool kept for bodies with their key inside, as on the Segment-spec and PostHog-compatible endpoints.</li>
<li>The body: <code>data=</code> with the base64 of the JSON, in the query of a <code>GET</code> (what the SDKs send for one message) or in a form <code>POST</code>; a <code>+</code> sent unencoded, which arrives as a space, is read as the <code>+</code> it was. <code>/import</code> also takes the JSON array itself. One message, or an array of 1 to ${MAX_MESSAGES.toLocaleString('en-US')}.</li>
<li>The libraries' own properties (<code>token</code>, <code>mp_lib</code>, <code>$lib_version</code>, <code>$os</code>, <code>$browser</code>, <code>$referrer</code> and the like) are left out; other <code>$</code> properties are checked as on every endpoint.</li>
</ul>
${table(['message', 'becomes'], MESSAGES.map(([t, what]) => [code(t), what]))}
<p>Answers are those the SDKs read. <code>/track</code>, <code>/engage</code> and <code>/groups</code>: <code>1</code> when every message was kept, <code>0</code> when any was refused (the others are kept; the SDK reports an error); with <code>verbose=1</code>, <code>{"status": 1, "error": null}</code> or <code>{"status": 0, "error": "&lt;codes&gt; (…)"}</code>. <code>/import</code>, sent a JSON array: <code>200 {"code": 200, "status": "OK", "num_records_imported": N}</code>, or, when any record is refused, <code>400</code> with <code>num_records_imported</code> and <code>failed_records</code> (<code>index</code>, <code>insert_id</code>, <code>field</code>, <code>message</code>), the others kept; sent <code>data=</code>, as the SDKs send it, it answers as <code>/track</code> does. A request refused whole keeps its status (401, 413, ${anchor('rate_limited')} with <code>Retry-After</code>, …) and answers <code>{"status": 0, "error": "&lt;code&gt;: &lt;message&gt;"}</code> (on <code>/import</code> sent JSON, <code>{"code", "status", "error"}</code>).</p>
</section>
`;
}
