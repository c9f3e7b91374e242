import { type DestinationConfig, type DestinationKind, previousName, previousUntilName } from '../../stores/port-destinations.js';
import { hostRefusal, refusedMessage } from '../reach.js';
import { maskUrl, parsedUrl, pointsAtSelf, portOf } from '../urls.js';
import { type WebhookSecrets, WebhookSender } from './sender.js';
import { newSecret } from './signature.js';

/** The secrets in a config: its secret, and the one a rotation replaced with the time it stops signing (destination-admin.ts, rotateSecret). */
const secretsOf = (config: DestinationConfig): WebhookSecrets => ({
  secret: config.secret ?? '',
  previous: config[previousName('secret')] ?? null,
  previousUntil: Number(config[previousUntilName('secret')] ?? 0),
});

/** Signed JSON POSTs to a URL (docs/destinations.md, "Webhook requests"). */
export const webhook: DestinationKind = {
  name: 'webhook',
  about: 'to a webhook',
  fields: [{ name: 'url', label: 'URL', help: 'the webhook URL (https:// or http://)', flag: '--url <url>', required: true, secret: true, mask: maskUrl }],
  made: [{ name: 'secret', prefix: 'whsec_', label: 'signing secret', use: "keep it to check each request's webhook-signature (Standard Webhooks) or Inlet-Signature", make: newSecret }],
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

  sender: (config: DestinationConfig, reach) => new WebhookSender(config.url ?? '', secretsOf(config), reach),
};
