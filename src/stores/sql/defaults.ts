import type { Engine } from '../engine.js';
import { eventPage, eventPosition } from './event-pages.js';
import { type EngineListingReads, distinctIdSearch } from './listings.js';

/** Every read an engine may tune, answered. */
export type TunedReads = EngineListingReads & Required<Pick<Engine, 'eventPage' | 'eventPosition'>>;

/**
 * The reads an engine tunes, its own where it has one, else one Kysely query
 * on its connection: an engine overrides only what it must (PostgreSQL takes
 * the default page of events; SQLite, which keeps no index on events, walks
 * its minute index instead).
 */
export function tunedReads(engine: Engine): TunedReads {
  const { sql } = engine;
  const pageRows: TunedReads['pageRows'] = engine.pageRows !== undefined
    ? (query) => engine.pageRows!(query)
    : async (query) => (await sql.db.executeQuery(query)).rows;
  return {
    eventPage: engine.eventPage?.bind(engine) ?? ((q) => eventPage(sql, q)),
    eventPosition: engine.eventPosition?.bind(engine) ?? ((sourceId, eventId) => eventPosition(sql, sourceId, eventId)),
    pageRows,
    personEvents: engine.personEvents.bind(engine),
    personPage: engine.personPage.bind(engine),
    countPersons: engine.countPersons.bind(engine),
    searchDistinctIds: engine.searchDistinctIds?.bind(engine) ?? ((projectId, prefix, limit) => distinctIdSearch(sql, projectId, prefix, limit).execute()),
  };
}
