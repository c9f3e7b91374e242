/** The reference page's section on the Segment-spec endpoints; the paths come from the route's own table. */
import { SEGMENT_PATHS } from '../intakes/segment/segment-map.js';
import { BATCH_PATH } from './facts.js';
import { Html, anchor, code, html, table } from './html.js';

/** What each message type becomes, as the mapping does it. */
const MESSAGE_TYPES: [string, Html | string][] = [
  ['track', html`a <code>track</code> item with its <code>event</code>`],
  ['identify', html`an <code>identify</code> item; <code>traits</code> are its properties`],
  ['page', html`a <code>track</code> item named <code>$pageview</code>, with the page <code>name</code> as the property <code>name</code>`],
  ['screen', html`a <code>track</code> item named <code>$screen</code>, likewise`],
  ['group', html`a <code>group</code> item: <code>groupId</code> is its <code>group_key</code>, <code>traits.group_type</code> its <code>group_type</code> (<code>company</code> when absent), the other <code>traits</code> its traits; the sender becomes a member`],
  ['alias', html`an <code>alias</code> item: <code>previousId</code> is its <code>previous_id</code>, <code>userId</code> its <code>distinct_id</code>`],
];

export function segmentSection(baseUrl: string): Html {
  const paths = [...SEGMENT_PATHS.keys()];
  return html`<section id="segment">
<h2>Segment-spec endpoints</h2>
<p>Code written for Segment's or RudderStack's server libraries works by pointing its host at <code>${baseUrl}</code>:
${paths.map((p, i) => html`${i === 0 ? '' : ', '}<code>POST ${p}</code>`)} take Segment's message format on the same server, with the same key, limits and checks as ${code(BATCH_PATH)}.</p>
<ul>
<li>The key: an Inlet server key, as the HTTP Basic user name with an empty password (what those libraries send as the write key), as <code>Authorization: Bearer</code>, or as <code>writeKey</code> in the body. A key in a header is checked before the body is read; one in the body only once the body is read, and such a body is read under its client's address, in a pool of the bytes being read kept for such bodies, and decompressed and parsed to find its key on a check thread, within a share of its own of their work (a body that finds it full is answered ${anchor('collection_unavailable')} with <code>Retry-After</code>), so clients without a key in a header cannot hold up the others.</li>
<li><code>/v1/batch</code> takes <code>{"batch": [...]}</code>; the others take one message. <code>Content-Type</code> is not checked here: the body must be JSON, gzip or not.</li>
<li><code>userId</code> is the <code>distinct_id</code>. <code>anonymousId</code> is the <code>anonymous_id</code> when it is a <code>per_</code> key; otherwise it is the <code>distinct_id</code> of a message without <code>userId</code>, and left out when there is one.</li>
<li><code>messageId</code> is the <code>insert_id</code>, so a library's retries are stored once; one that does not fit the <code>insert_id</code> rule is replaced by a stable hash of it.</li>
<li><code>timestamp</code> (or <code>originalTimestamp</code>) is moved by the sender's clock skew, the time of arrival minus <code>sentAt</code>, when <code>sentAt</code> is sent.</li>
<li><code>properties</code> (<code>traits</code> on identify) are the properties; <code>context.ip</code>, <code>context.userAgent</code> and <code>context.page.url</code> become <code>$ip</code>, <code>$user_agent</code> and <code>$current_url</code>. Other fields (<code>integrations</code>, the rest of <code>context</code>) are not kept.</li>
</ul>
${table(['message type', 'becomes'], MESSAGE_TYPES.map(([t, what]) => [code(t), what]))}
<p>A request that is taken is answered <code>200</code> with the body of a 202 from ${code(BATCH_PATH)}, refused items listed in <code>errors</code>, even when no item could be kept: these libraries treat any other 2xx the same and log every 4xx as a failure. Request errors keep their envelope and status, so ${anchor('rate_limited')} and ${anchor('collection_unavailable')} are retried by the libraries with the same <code>messageId</code>.</p>
</section>
`;
}
