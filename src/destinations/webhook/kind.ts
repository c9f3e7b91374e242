import type { DestinationConfig, DestinationKind } from '../../stores/port-destinations.js';
import { hostRefusal, refusedMessage } from '../reach.js';
import { maskUrl, parsedUrl, pointsAtSelf, portOf } from '../urls.js';
import { WebhookSender } from './sender.js';

/** Signed JSON POSTs to a URL (docs/destinations.md, "Webhook requests"). */
export const webhook: DestinationKind = {
  name: 'webhook',
  about: 'to a webhook',
  fields: [{ name: 'url', label: 'URL', help: 'the webhook URL (https:// or http://)', flag: '--url <url>', required: true, secret: true, mask: maskUrl }],
  made: [{ name: 'secret', prefix: 'whsec_', label: 'signing secret', use: "keep it to check each request's Inlet-Signature" }],
  docs: 'Webhook requests',
  example: '--url https://hooks.example.com/inlet',

  configure(given) {
    const url = given.url ?? '';
    const u = parsedUrl(url, 'https://example.com/inlet');
    if (typeof u === 'string') return { ok: false, error: u };
    if (u.protocol !== 'https:' && u.protocol !== 'http:') return { ok: false, error: `A webhook URL starts with https:// or http://, not "${u.protocol}".` };
    return { ok: true, config: { url } };
  },

  pointsAtSelf: (config, self) => pointsAtSelf(config.url ?? '', self),

  /** Its host resolved and its addresses judged; a name that does not resolve yet is let through (its receiver may come later). */
  async check(config, reach) {
    const u = new URL(config.url ?? '');
    return (await hostRefusal(u.hostname, portOf(u), reach)) === 'refused' ? refusedMessage(u.hostname) : null;
  },

  sender: (config: DestinationConfig, reach) => new WebhookSender(config.url ?? '', config.secret ?? '', reach),
};
