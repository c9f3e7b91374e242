import type { DeliverySender, DestinationRecord } from './port-destinations.js';
import { PostgresSender } from './destinations/postgres.js';
import { WebhookSender } from './destinations/webhook.js';

/** The sender of a destination's kind: the one place that knows which kinds exist and how each is reached. */
export function senderFor(d: Pick<DestinationRecord, 'kind' | 'url' | 'secret' | 'table'>): DeliverySender {
  switch (d.kind) {
    case 'webhook':
      return new WebhookSender(d.url, d.secret ?? '');
    case 'postgres':
      return new PostgresSender(d.url, d.table ?? 'inlet_events');
    default:
      return unknownKind(d.kind);
  }
}

function unknownKind(kind: never): never {
  throw new Error(`No sender for destination kind ${String(kind)}`);
}
