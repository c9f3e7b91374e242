import type { IngestTx } from '../../stores/port.js';
import { PersonResolver } from './resolver.js';

/**
 * Links a customer's id to a browser person, as the browser pipeline does on
 * identify. Returns the person now holding the id: the browser person, or
 * another browser person that already held it (which is left as it is).
 */
export async function browserIdentify(tx: IngestTx, projectId: string, anonymousId: string, distinctId: string, now: number): Promise<string> {
  await tx.lockProject(projectId);
  const people = new PersonResolver(tx, projectId, now);
  await people.preload([distinctId], [anonymousId]);
  const person = await people.linkToBrowserPerson(distinctId, anonymousId);
  await people.flush();
  return person.id;
}
