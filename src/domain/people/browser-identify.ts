import { type IngestTx, noPassWrites } from '../../stores/port.js';
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
  // No source: it reads and claims no insert_ids.
  const state = await tx.read({
    projectId, sourceId: '', keyIds: [], months: [], insertIds: [], linkedIds: [distinctId], personIds: [anonymousId],
    suppressed: { distinctIds: [distinctId], personIds: [anonymousId] },
  });
  if (state.suppressed.distinctIds.size > 0) return { suppressed: 'distinct_id' };
  if (state.suppressed.personIds.size > 0) return { suppressed: 'anonymous_id' };
  const writes = noPassWrites();
  const person = new PersonResolver(state, writes).linkToBrowserPerson(distinctId, anonymousId);
  await tx.write({ projectId, sourceId: '', now }, writes);
  return person.id;
}
