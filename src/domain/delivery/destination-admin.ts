import type { Store } from '../../stores/port.js';
import { DESTINATION_KINDS, type DestinationKind, type DestinationRecord, type DestinationTarget } from '../../stores/port-destinations.js';
import { AdminError } from '../admin.js';
import { randomBase62 } from '../ids.js';
import { LAG_COUNT_CAP } from './deliverer.js';
import { type SelfAddress, maskUrl, pointsAtSelf } from './urls.js';

/** What a new destination is made from (the CLI's flags, the console's form). */
export interface NewDestination {
  projectId: string;
  kind: string;
  url: string;
  table?: string | null;
  sources?: string[];
  events?: string[];
  /** Epoch ms: deliver events that arrived from then on; absent: from now. */
  since?: number | null;
}

/** Status as shown: paused, failing (the last attempt failed), or active. */
export type DestinationStatus = 'active' | 'failing' | 'paused';

export const statusOf = (d: Pick<DestinationRecord, 'paused' | 'lastError'>): DestinationStatus =>
  d.paused ? 'paused' : d.lastError !== null ? 'failing' : 'active';

/** A destination as the CLI and console show it: the URL masked, never the secret. */
export const destinationView = (d: DestinationRecord) => ({
  id: d.id,
  project_id: d.projectId,
  kind: d.kind,
  url: maskUrl(d.url),
  ...(d.kind === 'postgres' ? { table: d.table } : {}),
  sources: d.sources,
  events: d.events,
  status: statusOf(d),
});

/** A destination in `destination list`: where delivery stands. */
export interface DestinationListing {
  id: string;
  kind: DestinationKind;
  url: string;
  status: DestinationStatus;
  delivered: number;
  /** Events not delivered yet (counted up to a million). */
  lag_events: number;
  oldest_undelivered_at: string | null;
  last_error: string | null;
}

/** A table name: letters, digits and underscores, optionally after a schema name and a dot. */
const TABLE = /^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$/;

/** The secret webhook requests are signed with. */
const newSecret = (): string => `whsec_${randomBase62(32)}`;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** What the admin needs beyond the store to make a destination. */
export interface DestinationChecks {
  /** Where this server answers: a URL of it is refused. */
  self: SelfAddress;
  /**
   * Checks a destination before it is kept (its address, and for postgres a
   * connection that makes the table: stores/open-sender.ts checkDestination),
   * sending no event; null when it may be made, else why not.
   */
  check: (d: DestinationTarget) => Promise<string | null>;
}

/** The operations of `inlet destination` and the console's Destinations, over any store. */
export function destinationAdmin(store: Pick<Store, 'admin' | 'destinations' | 'eventPages'>, clock: () => number, checks: DestinationChecks) {
  const self = checks.self;
  const ds = store.destinations;

  async function destination(id: string): Promise<DestinationRecord> {
    const d = await ds.get(id);
    if (d === null) throw new AdminError(`No destination ${id}; "inlet destination list --project P" lists a project's destinations.`);
    return d;
  }

  function checkUrl(kind: DestinationKind, url: string): void {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw new AdminError(`The URL "${maskUrl(url)}" is not a URL; give one such as ${kind === 'webhook' ? 'https://example.com/inlet' : 'postgres://user:password@host:5432/db'}.`);
    }
    if (kind === 'webhook') {
      if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new AdminError(`A webhook URL starts with https:// or http://, not "${u.protocol}".`);
      if (pointsAtSelf(url, self)) throw new AdminError('The URL points at this Inlet server itself; give the URL of the receiver.');
    } else if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') {
      throw new AdminError(`A postgres destination's URL starts with postgres:// or postgresql://, not "${u.protocol}".`);
    }
  }

  return {
    /** Makes a destination; the secret of a webhook is in the answer, and only there. */
    async create(input: NewDestination) {
      const project = await store.admin.getProject(input.projectId);
      if (project === null) throw new AdminError(`No project ${input.projectId}; list your ids with the commands that created them.`);
      if (!(DESTINATION_KINDS as readonly string[]).includes(input.kind)) {
        throw new AdminError(`The kind must be ${DESTINATION_KINDS.join(' or ')}, not "${input.kind}".`);
      }
      const kind = input.kind as DestinationKind;
      checkUrl(kind, input.url);
      const table = input.table ?? null;
      if (kind === 'postgres' && (table === null || !TABLE.test(table))) {
        throw new AdminError('A postgres destination needs --table: letters, digits and underscores (a schema name and a dot may come first).');
      }
      if (kind === 'webhook' && table !== null) throw new AdminError('--table is for postgres destinations; a webhook has none.');
      const sources = [...new Set(input.sources ?? [])];
      const known = new Set(await store.eventPages.sourceIdsOf(project.id));
      for (const s of sources) if (!known.has(s)) throw new AdminError(`No source ${s} in project ${project.id}.`);
      const events = [...new Set(input.events ?? [])];
      for (const e of events) if (e.length === 0) throw new AdminError('An event name to deliver cannot be empty.');
      const refused = await checks.check({ kind, url: input.url, secret: null, table: kind === 'postgres' ? table : null });
      if (refused !== null) throw new AdminError(refused);
      const cursor = input.since == null ? await ds.head(project.id) : await ds.positionBefore(project.id, input.since);
      const d: DestinationRecord = {
        id: `dst_${randomBase62(16)}`, projectId: project.id, kind, url: input.url, table: kind === 'postgres' ? table : null,
        sources, events, secret: kind === 'webhook' ? newSecret() : null, paused: false, cursor, generation: 0,
        delivered: 0, lastError: null, lastDeliveredAt: null, createdAt: clock(),
      };
      await ds.create(d);
      return { ...destinationView(d), ...(d.secret !== null ? { secret: d.secret } : {}) };
    },

    async list(projectId: string): Promise<DestinationListing[]> {
      if ((await store.admin.getProject(projectId)) === null) throw new AdminError(`No project ${projectId}; list your ids with the commands that created them.`);
      const out: DestinationListing[] = [];
      for (const d of await ds.list(projectId)) {
        const head = await ds.head(projectId);
        out.push({
          id: d.id, kind: d.kind, url: maskUrl(d.url), status: statusOf(d), delivered: d.delivered,
          lag_events: await ds.countPast(d, d.cursor, head, LAG_COUNT_CAP),
          oldest_undelivered_at: iso(await ds.oldestPast(d, d.cursor, head)),
          last_error: d.lastError,
        });
      }
      return out;
    },

    async get(id: string) {
      return destinationView(await destination(id));
    },

    async pause(id: string) {
      await destination(id);
      return destinationView((await ds.setPaused(id, true))!);
    },

    async resume(id: string) {
      await destination(id);
      return destinationView((await ds.setPaused(id, false))!);
    },

    async delete(id: string) {
      await destination(id);
      await ds.delete(id);
      return { id, deleted: true as const };
    },

    /** Delivers again the events that arrived from `since` on. */
    async replay(id: string, since: number) {
      const d = await destination(id);
      await ds.replay(id, await ds.positionBefore(d.projectId, since));
      return { id, replay_from: new Date(since).toISOString() };
    },
  };
}

export type DestinationAdmin = ReturnType<typeof destinationAdmin>;
