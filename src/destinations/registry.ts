/**
 * The destination kinds this server knows: a kind is a folder beside this
 * file and one line below (docs/design.md, "Adding a destination kind").
 * The composition root hands this list to the domain, the console and the
 * CLI; nothing else names a kind.
 */
import { type DestinationKinds, type DestinationSender, type DestinationReach, type DestinationTarget, kindNamed } from '../stores/port-destinations.js';
import { postgres } from './postgres/kind.js';
import { s3 } from './s3/kind.js';
import { webhook } from './webhook/kind.js';

export const DESTINATION_KINDS: DestinationKinds = [
  webhook,
  postgres,
  s3,
];

function kindOf(d: DestinationTarget) {
  const kind = kindNamed(DESTINATION_KINDS, d.kind);
  if (kind === undefined) throw new Error(`No sender for destination kind ${d.kind}`);
  return kind;
}

/** The sender of a destination, made by its kind. */
export const senderFor = (d: DestinationTarget, reach: DestinationReach): DestinationSender => kindOf(d).sender(d.config, reach);

/** What a destination's creation checks before it is kept, sending nothing (its kind's `check`): null when it may be made, else why not. */
export const checkDestination = (d: DestinationTarget, reach: DestinationReach): Promise<string | null> => kindOf(d).check(d.config, reach);
