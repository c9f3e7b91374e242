import type { DeliverySender, DestinationTarget } from './port-destinations.js';
import { PostgresSender } from './destinations/postgres.js';
import { parsePostgresUrl } from './destinations/postgres-url.js';
import { type DestinationReach, hostRefusal, refusedMessage } from './destinations/reach.js';
import { WebhookSender } from './destinations/webhook.js';

/** The sender of a destination's kind: the one place that knows which kinds exist and how each is reached. */
export function senderFor(d: DestinationTarget, reach: DestinationReach): DeliverySender {
  switch (d.kind) {
    case 'webhook':
      return new WebhookSender(d.url, d.secret ?? '', reach);
    case 'postgres':
      return new PostgresSender(d.url, d.table ?? 'inlet_events', reach);
    default:
      return unknownKind(d.kind);
  }
}

/**
 * What a destination's creation checks before it is kept, sending nothing:
 * a `postgres` destination connects and makes its table (a database that
 * does not exist, or a wrong password, is said at once); a webhook's host
 * is resolved and its addresses judged (a name that does not resolve yet
 * is let through: its receiver may come later). Null when it may be made,
 * else why not.
 */
export async function checkDestination(d: DestinationTarget, reach: DestinationReach): Promise<string | null> {
  switch (d.kind) {
    case 'webhook': {
      const u = new URL(d.url);
      const port = u.port !== '' ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
      return (await hostRefusal(u.hostname, port, reach)) === 'refused' ? refusedMessage(u.hostname) : null;
    }
    case 'postgres': {
      const parsed = parsePostgresUrl(d.url);
      if (!parsed.ok) return parsed.error;
      const sender = new PostgresSender(d.url, d.table ?? 'inlet_events', reach);
      try {
        return await sender.prepare();
      } finally {
        await sender.close();
      }
    }
    default:
      return unknownKind(d.kind);
  }
}

function unknownKind(kind: never): never {
  throw new Error(`No sender for destination kind ${String(kind)}`);
}
