import type { KeyRecord, Org, Project, Source, Store } from '../stores/port.js';
import { newId } from './ids.js';
import { GRACE_PERIODS, type Grace, KEY_PREFIX, MAX_WORKING_KEYS, generateKey, hashKey, keyStatus, roomForKey } from './keys.js';
import { DEFAULT_RETENTION_DAYS } from './retention.js';
import { browserIdentify } from './people/browser-identify.js';
import { codePointLength, isStorableText } from './storable.js';

/** A field of an admin command's input that a refusal can name. */
export type AdminField = 'name' | 'orgId' | 'monthlyEventLimit' | 'retentionDays' | 'grace' | 'since';

/** A refusal of an admin command: the message says what to change; `field` names the input at fault, when one is. */
export class AdminError extends Error {
  constructor(
    message: string,
    readonly field: AdminField | null = null,
  ) {
    super(message);
  }
}

const count = (n: number): string => n.toLocaleString('en-US');

/** A key as shown after creation: never the secret. */
export interface KeyView {
  id: string;
  prefix: string;
  last_four: string;
  status: ReturnType<typeof keyStatus>;
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
}

/** The only time a key's secret is shown. */
export interface NewKeyView {
  id: string;
  key: string;
  prefix: string;
  last_four: string;
  created_at: string;
  replaces?: string;
}

/**
 * What a monthly event limit may be. At the default sustained rate limit a
 * project sends at most about 2.6 billion events a month; a trillion leaves
 * room for any plan and is exact in every store and in JavaScript.
 */
export const MONTHLY_EVENT_LIMIT_RANGE = { min: 0, max: 1_000_000_000_000 } as const;

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** The operations of the `inlet` admin command, over any store. */
export function createAdmin(store: Pick<Store, 'admin' | 'listings' | 'transaction' | 'findPerson'>, clock: () => number) {
  const a = store.admin;

  async function project(id: string): Promise<Project> {
    const p = await a.getProject(id);
    if (p === null) throw new AdminError(`No project ${id}; list your ids with the commands that created them.`);
    return p;
  }
  async function source(id: string): Promise<Source> {
    const s = await a.getSource(id);
    if (s === null) throw new AdminError(`No source ${id} (or its project or organization was deleted).`);
    return s;
  }
  async function addKey(sourceId: string, replaces?: { keyId: string; expiresAt: number }): Promise<NewKeyView> {
    const now = clock();
    const secret = generateKey();
    const record: KeyRecord = {
      id: newId('key'),
      sourceId,
      hash: hashKey(secret),
      lastFour: secret.slice(-4),
      createdAt: now,
      lastUsedAt: null,
      expiresAt: null,
      revokedAt: null,
    };
    const fits = (keys: KeyRecord[]): boolean => roomForKey(keys, { now, maxWorking: MAX_WORKING_KEYS, replaces });
    const r = await a.addKey(record, { fits, replaces });
    if (r === 'too_many_keys') {
      throw new AdminError(
        `Source ${sourceId} already has ${MAX_WORKING_KEYS} working keys. Revoke one first, or roll a key with --grace now.`,
      );
    }
    const view: NewKeyView = { id: record.id, key: secret, prefix: KEY_PREFIX, last_four: record.lastFour, created_at: iso(now)! };
    if (replaces) view.replaces = replaces.keyId;
    return view;
  }

  return {
    async createOrg(name: string): Promise<Org> {
      const org = { id: newId('org'), name: requireName(name), createdAt: clock() };
      await a.createOrg(org);
      return org;
    },
    async deleteOrg(id: string): Promise<void> {
      if (!(await a.deleteOrg(id, clock()))) throw new AdminError(`No organization ${id}.`);
    },
    async createProject(opts: { name: string; orgId?: string; apiEnabled?: boolean }): Promise<Project> {
      const now = clock();
      let orgId: string;
      if (opts.orgId !== undefined) {
        if ((await a.getOrg(opts.orgId)) === null) throw new AdminError(`No organization ${opts.orgId}.`, 'orgId');
        orgId = opts.orgId;
      } else {
        orgId = (await a.defaultOrg(() => ({ id: newId('org'), name: 'default', createdAt: now }))).id;
      }
      const p: Project = { id: newId('prj'), orgId, name: requireName(opts.name), apiEnabled: opts.apiEnabled ?? false, monthlyEventLimit: null, retentionDays: DEFAULT_RETENTION_DAYS, createdAt: now };
      await a.createProject(p);
      return p;
    },
    getProject: project,
    async updateProject(id: string, patch: { apiEnabled?: boolean; monthlyEventLimit?: number | null; retentionDays?: number }): Promise<Project> {
      if (patch.monthlyEventLimit != null) checkMonthlyEventLimit(patch.monthlyEventLimit);
      if (patch.retentionDays !== undefined) checkRetentionDays(patch.retentionDays);
      await project(id);
      return (await a.updateProject(id, patch))!;
    },
    listOrgs: () => store.listings.listOrgs(),
    async listProjects(orgId?: string): Promise<Project[]> {
      if (orgId !== undefined && (await a.getOrg(orgId)) === null) throw new AdminError(`No organization ${orgId}.`);
      return store.listings.listProjects(orgId ?? null);
    },
    async listSources(projectId: string): Promise<Source[]> {
      await project(projectId);
      return store.listings.listSources(projectId);
    },
    async deleteProject(id: string): Promise<void> {
      if (!(await a.deleteProject(id, clock()))) throw new AdminError(`No project ${id}.`);
    },
    async createSource(opts: { projectId: string; name: string; filterBots?: boolean; recordIp?: boolean }): Promise<Source> {
      await project(opts.projectId);
      const s: Source = {
        id: newId('src'),
        projectId: opts.projectId,
        name: requireName(opts.name),
        filterBots: opts.filterBots ?? true,
        recordIp: opts.recordIp ?? false,
        createdAt: clock(),
      };
      await a.createSource(s);
      return s;
    },
    getSource: source,
    async updateSource(id: string, patch: { filterBots?: boolean; recordIp?: boolean }): Promise<Source> {
      await source(id);
      return (await a.updateSource(id, patch))!;
    },
    async deleteSource(id: string): Promise<void> {
      if (!(await a.deleteSource(id, clock()))) throw new AdminError(`No source ${id}.`);
    },
    async createKey(sourceId: string): Promise<NewKeyView> {
      await source(sourceId);
      return addKey(sourceId);
    },
    async listKeys(sourceId: string): Promise<KeyView[]> {
      await source(sourceId);
      const now = clock();
      return (await a.listKeys(sourceId)).map((k) => ({
        id: k.id,
        prefix: KEY_PREFIX,
        last_four: k.lastFour,
        status: keyStatus(k, now),
        created_at: iso(k.createdAt)!,
        last_used_at: iso(k.lastUsedAt),
        expires_at: iso(k.expiresAt),
      }));
    },
    async rollKey(keyId: string, grace: Grace): Promise<NewKeyView> {
      const k = await a.getKey(keyId);
      if (k === null) throw new AdminError(`No key ${keyId}.`);
      const status = keyStatus(k, clock());
      if (status !== 'active') {
        throw new AdminError(`Key ${keyId} is ${status}; only an active key can be rolled. Create a new key instead.`);
      }
      await source(k.sourceId);
      const graceMs = GRACE_PERIODS.get(grace);
      if (graceMs === undefined) throw new AdminError(`The grace period is now, 24h or 7d, not "${grace}".`, 'grace');
      return addKey(k.sourceId, { keyId, expiresAt: clock() + graceMs });
    },
    async revokeKey(keyId: string): Promise<void> {
      if (!(await a.revokeKey(keyId, clock()))) throw new AdminError(`No key ${keyId}.`);
    },
    async browserIdentify(projectId: string, anonymousId: string, distinctId: string) {
      await project(projectId);
      const person = await store.transaction((tx) => browserIdentify(tx, projectId, anonymousId, distinctId, clock()));
      if (typeof person !== 'string') {
        const [flag, id] = person.suppressed === 'distinct_id' ? ['--distinct-id', distinctId] : ['--person-id', anonymousId];
        throw new AdminError(
          `${id} belongs to a person erased with suppression in project ${projectId}, so nothing is linked to it or stored for it; only "inlet person unsuppress --project ${projectId} ${flag} ${id}" lifts that.`,
        );
      }
      return (await store.findPerson(projectId, { personId: person }))!;
    },
  };
}

/** The longest retention a project may have: ten years. */
export const MAX_RETENTION_DAYS = 3650;

function checkRetentionDays(days: number): void {
  if (!Number.isSafeInteger(days) || days < 1 || days > MAX_RETENTION_DAYS) {
    throw new AdminError(`--retention-days must be a whole number of days from 1 to ${count(MAX_RETENTION_DAYS)}, not ${days}.`, 'retentionDays');
  }
}

/** Names are stored on every engine too: the storability rule applies to them. */
function requireName(name: string): string {
  const n = name.trim();
  const length = codePointLength(n);
  if (length === 0 || length > 200 || !isStorableText(n)) {
    throw new AdminError('--name must be 1 to 200 characters, without U+0000 or lone surrogates.', 'name');
  }
  return n;
}

function checkMonthlyEventLimit(n: number): void {
  const { min, max } = MONTHLY_EVENT_LIMIT_RANGE;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new AdminError(`The monthly event limit must be a whole number from ${count(min)} to ${count(max)}, or none.`, 'monthlyEventLimit');
  }
}
