import type { EngineReads, SqlEngine } from '../port.js';
import { eventPage, eventPosition } from './event-pages.js';
import { type EngineListingReads, distinctIdSearch } from './listings.js';

/** Every read an engine may tune, answered. */
export type TunedReads = EngineListingReads & Required<Pick<EngineReads, 'eventPage' | 'eventPosition'>>;

/**
 * The reads an engine tunes, its own where it has one, else one Kysely query
 * on its connection: an engine overrides only what it must (PostgreSQL takes
 * the default page of events; SQLite, which keeps no index on events, walks
 * its minute index instead).
 */
export function tunedReads(sql: SqlEngine, reads: EngineReads): TunedReads {
  const pageRows: TunedReads['pageRows'] = reads.pageRows !== undefined
    ? (query) => reads.pageRows!(query)
    : async (query) => (await sql.db.executeQuery(query)).rows;
  return {
    eventPage: reads.eventPage?.bind(reads) ?? ((q) => eventPage(sql, q)),
    eventPosition: reads.eventPosition?.bind(reads) ?? ((sourceId, eventId) => eventPosition(sql, sourceId, eventId)),
    pageRows,
    personEvents: reads.personEvents.bind(reads),
    personPage: reads.personPage.bind(reads),
    countPersons: reads.countPersons?.bind(reads) ?? (async (projectId) => {
      const [r] = await pageRows(sql.db.selectFrom('persons').select((eb) => eb.fn.countAll<number>().as('n'))
        .where('project_id', '=', projectId).where('merged_into', 'is', null).compile());
      return Number(r?.n ?? 0);
    }),
    searchDistinctIds: reads.searchDistinctIds?.bind(reads) ?? ((projectId, prefix, limit) => distinctIdSearch(sql, projectId, prefix, limit).execute()),
  };
}
