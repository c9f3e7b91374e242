import type { Store } from '../../stores/port.js';
import { type DestinationConfig, type DestinationKind, type DestinationKinds, type DestinationRecord, type DestinationTarget, type MadeField, type SelfAddress, kindNamed, previousName, previousUntilName } from '../../stores/port-destinations.js';
import { AdminError } from '../admin.js';
import { randomBase62 } from '../ids.js';
import { LAG_COUNT_CAP } from './deliverer.js';
import { kindChoice, longFlag, offeredFields, shownConfig, whereTo } from './destination-fields.js';

/** What a new destination is made from (the CLI's flags, the console's form). */
export interface NewDestination {
  projectId: string;
  kind: string;
  /** The values of the kinds' fields, by field name; absent: not given. */
  fields: Readonly<Record<string, string | undefined>>;
  sources?: string[];
  events?: string[];
  /** Epoch ms: deliver events that arrived from then on; absent: from now. */
  since?: number | null;
}

/** How long a rotated secret still signs beside its new one, so receivers can change theirs without losing a request. */
export const ROTATION_OVERLAP_MS = 24 * 3_600_000;

/** A kind's name after its article, as it is read aloud: "a webhook", "an s3" (a name of letters and digits is spelled out). */
const aKind = (name: string): string => `${/^[aeiou]|^[fhlmnrsx]\d/i.test(name) ? 'an' : 'a'} ${name}`;
const capital = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

const makeValue = (m: MadeField): string => m.make?.() ?? `${m.prefix}${randomBase62(32)}`;

/** Status as shown: paused, failing (the last attempt failed), or active. */
export type DestinationStatus = 'active' | 'failing' | 'paused';

export const statusOf = (d: Pick<DestinationRecord, 'paused' | 'lastError'>): DestinationStatus =>
  d.paused ? 'paused' : d.lastError !== null ? 'failing' : 'active';

/** A destination as the CLI and console show it: its config as its kind shows it, never a made secret. */
export const destinationView = (kinds: DestinationKinds, d: DestinationRecord) => ({
  id: d.id,
  project_id: d.projectId,
  kind: d.kind,
  ...shownConfig(kindNamed(kinds, d.kind), d.config),
  sources: d.sources,
  events: d.events,
  status: statusOf(d),
});

/** A destination in `destination list`: where delivery stands. */
export interface DestinationListing {
  id: string;
  kind: string;
  /** Where it delivers: its first field that may be shown, secrets masked (destination-fields.ts, whereTo). */
  url: string;
  status: DestinationStatus;
  delivered: number;
  /** Events not delivered yet (counted up to a million). */
  lag_events: number;
  oldest_undelivered_at: string | null;
  last_error: string | null;
  /** Why delivery paused itself (the receiver answered 410); null otherwise. */
  paused_reason: string | null;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** What the admin needs beyond the store to make a destination. */
export interface DestinationChecks {
  /** Where this server answers: a URL of it is refused. */
  self: SelfAddress;
  /**
   * Checks a destination before it is kept (its kind's `check`: an address
   * judged, a connection made), sending no event; null when it may be made,
   * else why not.
   */
  check: (d: DestinationTarget) => Promise<string | null>;
  /** The kinds a destination may be of (src/destinations/registry.ts). */
  kinds: DestinationKinds;
}

/** The operations of `inlet destination` and the console's Destinations, over any store. */
export function destinationAdmin(store: Pick<Store, 'admin' | 'destinations' | 'eventPages'>, clock: () => number, checks: DestinationChecks) {
  const self = checks.self;
  const ds = store.destinations;
  const view = (d: DestinationRecord) => destinationView(checks.kinds, d);

  async function destination(id: string): Promise<DestinationRecord> {
    const d = await ds.get(id);
    if (d === null) throw new AdminError(`No destination ${id}; "inlet destination list --project P" lists a project's destinations.`);
    return d;
  }

  /** The kind's config from the values given, or why not: a value of another kind's field is refused, as is a URL of this server. */
  function configure(kind: DestinationKind, given: NewDestination['fields']): DestinationConfig {
    const own = Object.fromEntries(kind.fields.flatMap((f) => (Object.hasOwn(given, f.name) ? [[f.name, given[f.name]]] : [])));
    const configured = kind.configure(own);
    if (!configured.ok) throw new AdminError(configured.error);
    if (kind.pointsAtSelf?.(configured.config, self) === true) throw new AdminError('The URL points at this Inlet server itself; give the URL of the receiver.');
    for (const f of offeredFields(checks.kinds)) {
      if (!f.kinds.includes(kind.name) && Object.hasOwn(given, f.name) && given[f.name] !== undefined) {
        throw new AdminError(`${longFlag(f)} is for ${f.kinds.join(' and ')} destinations; ${aKind(kind.name)} has none.`);
      }
    }
    const made: Record<string, string> = {};
    for (const m of kind.made) made[m.name] = makeValue(m);
    return { ...configured.config, ...made };
  }

  return {
    /** Makes a destination; what Inlet made for it (a signing secret) is in the answer, and only there. */
    async create(input: NewDestination) {
      const project = await store.admin.getProject(input.projectId);
      if (project === null) throw new AdminError(`No project ${input.projectId}; list your ids with the commands that created them.`);
      const kind = kindNamed(checks.kinds, input.kind);
      if (kind === undefined) throw new AdminError(`The kind must be ${kindChoice(checks.kinds)}, not "${input.kind}".`);
      const config = configure(kind, input.fields);
      const sources = [...new Set(input.sources ?? [])];
      const known = new Set(await store.eventPages.sourceIdsOf(project.id));
      for (const s of sources) if (!known.has(s)) throw new AdminError(`No source ${s} in project ${project.id}.`);
      const events = [...new Set(input.events ?? [])];
      for (const e of events) if (e.length === 0) throw new AdminError('An event name to deliver cannot be empty.');
      const refused = await checks.check({ kind: kind.name, config });
      if (refused !== null) throw new AdminError(refused);
      const cursor = input.since == null ? await ds.head(project.id) : await ds.positionBefore(project.id, input.since);
      const d: DestinationRecord = {
        id: `dst_${randomBase62(16)}`, projectId: project.id, kind: kind.name, config, sources, events, paused: false, cursor, generation: 0,
        delivered: 0, lastError: null, lastDeliveredAt: null, createdAt: clock(), pausedReason: null, file: null,
      };
      await ds.create(d);
      // What Inlet made (a signing secret) is in this answer and nowhere else; madeOnce reads it back.
      const made: Record<string, string> = Object.fromEntries(kind.made.map((m) => [m.name, config[m.name]!]));
      return { ...view(d), ...made };
    },

    async list(projectId: string): Promise<DestinationListing[]> {
      if ((await store.admin.getProject(projectId)) === null) throw new AdminError(`No project ${projectId}; list your ids with the commands that created them.`);
      const out: DestinationListing[] = [];
      for (const d of await ds.list(projectId)) {
        const head = await ds.head(projectId);
        out.push({
          id: d.id, kind: d.kind, url: whereTo(checks.kinds, d), status: statusOf(d), delivered: d.delivered,
          lag_events: await ds.countPast(d, d.cursor, head, LAG_COUNT_CAP),
          oldest_undelivered_at: iso(await ds.oldestPast(d, d.cursor, head)),
          last_error: d.lastError,
          paused_reason: d.paused ? d.pausedReason : null,
        });
      }
      return out;
    },

    async get(id: string) {
      return view(await destination(id));
    },

    async pause(id: string) {
      await destination(id);
      return view((await ds.setPaused(id, true))!);
    },

    async resume(id: string) {
      await destination(id);
      return view((await ds.setPaused(id, false))!);
    },

    async delete(id: string) {
      await destination(id);
      await ds.delete(id);
      return { id, deleted: true as const };
    },

    /**
     * A new signing secret, shown in this answer only; the one it replaces
     * still signs beside it for ROTATION_OVERLAP_MS (both signatures on each
     * request), then no more.
     */
    async rotateSecret(id: string) {
      const d = await destination(id);
      const made = kindNamed(checks.kinds, d.kind)?.made.find((m) => m.name === 'secret');
      if (made === undefined) throw new AdminError(`${capital(aKind(d.kind))} destination has no signing secret to rotate.`);
      const until = clock() + ROTATION_OVERLAP_MS;
      const secret = makeValue(made);
      const config: DestinationConfig = { ...d.config, secret, [previousName('secret')]: d.config.secret ?? '', [previousUntilName('secret')]: String(until) };
      await ds.setConfig(id, config);
      return { id, secret, previous_valid_until: new Date(until).toISOString() };
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
