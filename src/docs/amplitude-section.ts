/** The reference page's section on the Amplitude-compatible endpoints; the paths come from the route's own table. */
import { AMPLITUDE_PATHS, MAX_EVENTS, MAX_MEMBERSHIPS } from '../intakes/amplitude/amplitude-map.js';
import { BATCH_PATH } from './facts.js';
import { Html, anchor, code, html, table } from './html.js';

/** What each event becomes, as the mapping does it. */
const EVENTS: [string, Html | string][] = [
  ['$identify', html`an <code>identify</code> item: <code>user_properties.$set</code> its traits, <code>$setOnce</code> its <code>set_once</code>, <code>$unset</code> its <code>unset</code>; its <code>groups</code> (what <code>setGroup</code> sends) make the person a member of each`],
  ['$groupidentify', html`a <code>group</code> item for each group <code>groups</code> names (the SDK's <code>groupIdentify</code> may give a list of names), <code>group_properties.$set</code> its traits`],
  ['any other event', html`a <code>track</code> item: <code>event_type</code> its event, <code>event_properties</code> its properties, <code>groups</code> its <code>$groups</code>; its <code>user_properties</code> also update the person, as with PostHog's <code>$set</code>`],
  ['$add, $append, $prepend, $remove, $preInsert, $postInsert, $clearAll', html`refused with ${anchor('unsupported_operation')}, in <code>user_properties</code> or <code>group_properties</code>`],
];

/** The paths as the page lists them: each once, without its trailing slash. */
export function amplitudePathList(): string[] {
  return [...AMPLITUDE_PATHS].filter((p) => !p.endsWith('/'));
}

export function amplitudeSection(baseUrl: string): Html {
  return html`<section id="amplitude">
<h2>Amplitude-compatible endpoints</h2>
<p>Code written for <code>@amplitude/analytics-node</code>, or for Amplitude's HTTP V2 API, works by setting its <code>serverUrl</code> to <code>${baseUrl}/2/httpapi</code> (or <code>${baseUrl}/batch</code>, Amplitude's own path, or <code>${baseUrl}/2/batch</code>, with <code>useBatch</code>):
${amplitudePathList().map((p, i) => html`${i === 0 ? '' : ', '}<code>POST ${p}</code>`)} take <code>{"api_key": "…", "events": [...]}</code> with 1 to ${MAX_EVENTS.toLocaleString('en-US')} events (whose <code>$identify</code> and <code>$groupidentify</code> events name at most ${MAX_MEMBERSHIPS.toLocaleString('en-US')} groups in all), on the same server, with the same key, limits and checks as ${code(BATCH_PATH)}.</p>
<ul>
<li>The key: an Inlet server key as <code>api_key</code> (where the SDK puts its API key), or as <code>Authorization: Bearer</code>.</li>
<li><code>user_id</code> is the <code>distinct_id</code>; <code>device_id</code> is the <code>anonymous_id</code> when it is a browser person key, else the <code>distinct_id</code> of an event without <code>user_id</code>. <code>time</code> (milliseconds) is the <code>timestamp</code>; <code>insert_id</code> (the SDK makes one for every event) the <code>insert_id</code>, so a resend is stored once. Everything else the SDK sends of the library, the device and the platform is left out.</li>
</ul>
${table(['event', 'becomes'], EVENTS.map(([t, what]) => [code(t), what]))}
<p>Answers are those the SDK reads, by the <code>code</code> in the JSON: <code>200 {"code": 200, "events_ingested": N, "payload_size_bytes": B, "server_upload_time": ms}</code>; when any event is refused, <code>400 {"code": 400, "error": "&lt;first error&gt;", "events_ingested": N, "events_with_invalid_fields": {"&lt;field&gt;": [indices]}}</code> with the others kept: the SDK reports the refused events to the calling code and sends the rest again, which are repeats of their <code>insert_id</code>s, stored once. A missing key is Amplitude's <code>400</code> with <code>"missing_field": "api_key"</code>, a wrong one <code>400</code> with <code>"Invalid API key: …"</code>, reported at once; ${anchor('rate_limited')} is <code>429</code> with <code>Retry-After</code>; a body over 1 MiB is <code>413</code>, on which the SDK halves its batch. Every other refusal of the whole request, an unknown path under <code>/2/</code> too, is <code>{"code": &lt;status&gt;, "error": "&lt;code&gt;: &lt;message&gt;"}</code>. <code>/batch</code> is PostHog's path too: a body there is Amplitude's when it has an <code>events</code> array (and no <code>batch</code>) and its key in <code>api_key</code>, as the SDK sends it, and PostHog's otherwise; <code>/batch/</code>, with the slash, is PostHog's alone.</p>
</section>
`;
}
