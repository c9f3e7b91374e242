/** The reference page's section on the PostHog-compatible endpoints; the paths come from the route's own table. */
import { POSTHOG_PATHS } from '../intakes/posthog/posthog-map.js';
import { BATCH_PATH } from './facts.js';
import { Html, anchor, code, html, table } from './html.js';

/** What each PostHog event becomes, as the mapping does it. */
const EVENTS: [string, Html | string][] = [
  ['$identify', html`an <code>identify</code> item: <code>$set</code> its traits, <code>$set_once</code> its <code>set_once</code>, <code>$unset</code> its <code>unset</code>`],
  ['$set, $set_once', html`likewise (what posthog-node's <code>setPersonProperties</code> and the Python library's <code>set()</code> and <code>set_once()</code> send); <code>$set</code> and <code>$set_once</code> are read in <code>properties</code> and at the top level of the event, where the Python and Go libraries put them`],
  ['$create_alias', html`an <code>alias</code> item: <code>properties.alias</code> is its <code>previous_id</code>`],
  ['$groupidentify', html`a <code>group</code> item: <code>$group_type</code>, <code>$group_key</code>, and <code>$group_set</code> as its traits; the sender becomes a member unless its id is the <code>$&lt;type&gt;_&lt;key&gt;</code> posthog-node sends without a <code>distinctId</code>, or the random UUID the Python library sends without one`],
  ['$pageview', html`a <code>track</code> item named <code>$pageview</code>`],
  ['any other name', html`a <code>track</code> item; other <code>$</code> names are refused with ${anchor('reserved_event_name')}`],
];

/** The paths as the page lists them: each once, with its trailing slash. */
export function postHogPathList(): string[] {
  return [...POSTHOG_PATHS].filter((p) => p.endsWith('/'));
}

export function postHogSection(baseUrl: string): Html {
  const paths = postHogPathList();
  return html`<section id="posthog">
<h2>PostHog-compatible endpoints</h2>
<p>Code written for posthog-node, or for PostHog's HTTP capture API, works by pointing its host at <code>${baseUrl}</code>:
${paths.map((p, i) => html`${i === 0 ? '' : ', '}<code>POST ${p}</code>`)} (the trailing slash is optional) take PostHog's event format on the same server, with the same key, limits and checks as ${code(BATCH_PATH)}.</p>
<ul>
<li>The key: an Inlet server key, as <code>api_key</code> in the body (where posthog-node puts its project key), as <code>token</code>, or as <code>Authorization: Bearer</code>. A body with its key inside is read under its client's address, in the pool kept for such bodies, and its key is found on a check thread, as on the Segment-spec endpoints: when the server already holds as many such bodies as it checks at once, it is answered ${anchor('collection_unavailable')} with <code>Retry-After</code>; a key in the header is never held up by them.</li>
<li>The body: <code>{"api_key": "…", "batch": [events]}</code>, an array of events, or one event. Gzip is read when <code>Content-Encoding: gzip</code> says so or when the query says <code>compression=gzip-js</code>; other query parameters are ignored. <code>Content-Type</code> is not checked: the body must be JSON, gzip or not.</li>
<li><code>distinct_id</code> is the <code>distinct_id</code>; <code>uuid</code> is the <code>insert_id</code> (a stable hash of it when it breaks the <code>insert_id</code> rule), so retries are stored once, across every intake of the source.</li>
<li><code>timestamp</code> is moved by the sender's clock skew, the time of arrival minus <code>sent_at</code>, when <code>sent_at</code> is sent.</li>
<li><code>properties</code> are the properties, without what PostHog's libraries (Node, Python, Go, Ruby, Java, PHP, the browser's) set themselves: <code>$lib</code>, <code>$lib_version</code>, <code>$geoip_disable</code>, <code>$is_server</code>, <code>$os</code>, <code>$os_version</code>, <code>$os_distro</code>, <code>$python_runtime</code>, <code>$python_version</code>, <code>$go_version</code>, <code>$lib_consumer</code>, <code>$feature/…</code> and PostHog's other enrichment; <code>$groups</code> is kept.</li>
<li><code>$set</code>, <code>$set_once</code> and <code>$unset</code> on any other event also update the person, as an identify with the same id and timestamp would, with an <code>insert_id</code> of its own derived from the event's, so a resend applies it once. The message is still one item, answered once at its own index and counted once (against the limits and in the outcomes): <code>accepted</code> (or a repeat in <code>duplicates</code>) when its event is kept, the person updated with it. A message whose person operations are invalid is refused whole, as an item with one bad property is: neither its event nor its update is kept, and its errors name the fields as sent, such as <code>properties.$set.&lt;key&gt;</code>. A message the bot filter drops updates no one.</li>
</ul>
${table(['event', 'becomes'], EVENTS.map(([t, what]) => [code(t), what]))}
<p>A request that is taken is answered <code>200</code> with the body of a 202 from ${code(BATCH_PATH)}, refused items listed in <code>errors</code>. Request errors keep their envelope and status, so ${anchor('rate_limited')} and ${anchor('collection_unavailable')} are retried by the library with the same <code>uuid</code>.</p>
</section>
`;
}
