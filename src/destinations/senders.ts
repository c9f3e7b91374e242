import type { DeliverySender } from '../domain/delivery/sender.js';
import type { DestinationRecord } from '../stores/port-destinations.js';
import { PostgresSender } from './postgres.js';
import { WebhookSender } from './webhook.js';

/** The sender of a destination's kind: the one place that knows which kinds exist and how each is reached. */
export function senderFor(d: DestinationRecord): DeliverySender {
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
