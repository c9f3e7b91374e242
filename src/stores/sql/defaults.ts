import type { CompiledQuery } from 'kysely';
import type { Engine, EventPosition, EventRow, PositionedPageQuery, SqlEngine } from '../port.js';
import type { DeliveryEvent } from '../port-destinations.js';
import type { WriteTurn } from './engine.js';
import { eventPage, eventPosition } from './event-pages.js';
import { distinctIdSearch } from './listings.js';

/**
 * What an engine may tune, each with a default below (one Kysely query on
 * its connection, or no bound): not part of the engine contract, for an
 * engine's store class hands SqlStore only what it replaces (`Tuned`).
 * PostgreSQL takes the default event pages and count of people; SQLite (no
 * index on events) walks its minute index instead.
 */
export interface Tuning {
  /** A page of a source's events in its order, `limit` at most (never asked for less than one). */
  eventPage(q: PositionedPageQuery): Promise<EventRow[]>;
  /** Where the source's event with this id stands; the id is a UUID in lower case. */
  eventPosition(sourceId: string, eventId: string): Promise<EventPosition | null>;
  /**
   * A query written once that scans many rows (the chart's and the source
   * page's counts, group pages), run where such reads run: never on the
   * SQLite connection that writes, within PostgreSQL's bound on them.
   */
  pageRows<R>(query: CompiledQuery<R>): Promise<R[]>;
  /** The project's people (merged persons left out), counted from persons_newest alone, where page reads run (`pageRows`). */
  countPersons(projectId: string): Promise<number>;
  /** A project's distinct ids that start with `prefix`, in byte order, with their persons (a keystroke at a time). */
  searchDistinctIds(projectId: string, prefix: string, limit: number): Promise<{ distinct_id: string; person_id: string }[]>;
  /**
   * Every query of delivery runs through here: on PostgreSQL a gate that
   * lets delivery hold few of the pool's connections, whatever the number of
   * destinations, so the write path always finds one.
   */
  deliveryTurn: WriteTurn;
  /**
   * The turn of destinations' own writes (cursors, leases), which change no
   * key: SQLite's queue without the mark that empties its cache of keys.
   * Engine.write by default.
   */
  destinationWrite: WriteTurn;
  /**
   * The turn of the fold of a person's events (sql/person-events.ts), which
   * changes no key nor person: SQLite's queue without the mark that empties
   * its cache of keys. Engine.write by default.
   */
  foldWrite: WriteTurn;
  /**
   * Whether a fold step holds what ingestion needs while it runs: SQLite's
   * one writer, on the thread that serves requests (FoldStep.heldWriter).
   * Not by default: writers run at once, on the database server.
   */
  foldHoldsWriter: boolean;
  /**
   * The project's events past `after` up to `upTo`, in position order,
   * `limit` at most: delivery's hot read (every event passes through it),
   * hand-written where the engine's driver makes the shared query cost more.
   */
  readPast(projectId: string, after: number, upTo: number, limit: number): Promise<DeliveryEvent[]>;
  /** Store.keyLookupLimitMs: none unless a lookup can hang (a database server's round trip). */
  keyLookupLimitMs: number;
}

/** What an engine replaces of Tuning: the rest is the defaults'. */
export type Tuned = Partial<Tuning>;

/** Every read the store makes of an engine beyond the contract's own, answered. */
export type TunedReads = Pick<Tuning, 'eventPage' | 'eventPosition' | 'pageRows' | 'countPersons' | 'searchDistinctIds'> &
  Pick<Engine, 'personPage'>;

/**
 * The reads an engine tunes, its own where it gave one, else the default:
 * an engine overrides only what it must.
 */
export function tunedReads(sql: SqlEngine, engine: Pick<Engine, 'personPage'>, tuned: Tuned = {}): TunedReads {
  const pageRows: TunedReads['pageRows'] = tuned.pageRows !== undefined
    ? (query) => tuned.pageRows!(query)
    : async (query) => (await sql.db.executeQuery(query)).rows;
  return {
    eventPage: tuned.eventPage?.bind(tuned) ?? ((q) => eventPage(sql, q)),
    eventPosition: tuned.eventPosition?.bind(tuned) ?? ((sourceId, eventId) => eventPosition(sql, sourceId, eventId)),
    pageRows,
    personPage: engine.personPage.bind(engine),
    countPersons: tuned.countPersons?.bind(tuned) ?? (async (projectId) => {
      const [r] = await pageRows(sql.db.selectFrom('persons').select((eb) => eb.fn.countAll<number>().as('n'))
        .where('project_id', '=', projectId).where('merged_into', 'is', null).compile());
      return Number(r?.n ?? 0);
    }),
    searchDistinctIds: tuned.searchDistinctIds?.bind(tuned) ?? ((projectId, prefix, limit) => distinctIdSearch(sql, projectId, prefix, limit).execute()),
  };
}
