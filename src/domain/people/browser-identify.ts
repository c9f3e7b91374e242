import type { IngestTx } from '../../stores/port.js';
import { PersonResolver } from './resolver.js';

/** The id that kept a link from being made: it belongs to a person erased with suppression. */
export interface SuppressedLink {
  suppressed: 'distinct_id' | 'anonymous_id';
}

/**
 * Links a customer's id to a browser person, as the browser pipeline does on
 * identify. Returns the person now holding the id: the browser person, or
 * another browser person that already held it (which is left as it is). A
 * suppressed id links nothing, as ingestion drops an item that names one.
 */
export async function browserIdentify(tx: IngestTx, projectId: string, anonymousId: string, distinctId: string, now: number): Promise<string | SuppressedLink> {
  await tx.lockProject(projectId);
  const suppressed = await tx.findSuppressed(projectId, [distinctId], [anonymousId]);
  if (suppressed.distinctIds.size > 0) return { suppressed: 'distinct_id' };
  if (suppressed.personIds.size > 0) return { suppressed: 'anonymous_id' };
  const people = new PersonResolver(tx, projectId, now);
  await people.preload([distinctId], [anonymousId]);
  const person = await people.linkToBrowserPerson(distinctId, anonymousId);
  await people.flush();
  return person.id;
}
