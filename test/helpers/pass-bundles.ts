import { type PassQuery, type PassWrites, noPassWrites } from '../../src/stores/port.js';

/** A read of only the fields given (every other list empty, so not read). */
export function passQuery(projectId: string, sourceId: string, fields: Partial<Omit<PassQuery, 'projectId' | 'sourceId'>> = {}): PassQuery {
  return { projectId, sourceId, keyIds: [], months: [], insertIds: [], linkedIds: [], personIds: [], suppressed: { distinctIds: [], personIds: [] }, ...fields };
}

/** A bundle of only the writes given. */
export function passWrites(fields: Partial<PassWrites>): PassWrites {
  return { ...noPassWrites(), ...fields };
}
