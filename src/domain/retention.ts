import type { ErasureStore, ExpiryPlan, PersonEventsFold, ProjectRetention, RetentionStore } from '../stores/port.js';
import type { OutcomeStore } from '../stores/port-outcomes.js';
import { finishErasure } from './erasure.js';

/** Days a refused or dropped item is kept at most, whatever the project's retention. */
export const SAMPLE_RETENTION_DAYS = 30;

/**
 * Deletes kept items (samples) past their project's retention, or
 * SAMPLE_RETENTION_DAYS if that is shorter, and the outcome counts of minutes
 * past the project's retention (a row per source and minute would otherwise
 * grow for good).
 */
export async function expireSamples(store: Pick<RetentionStore, 'projectRetentions'>, outcomes: Pick<OutcomeStore, 'expireSamples' | 'expireCounts'>, now: number): Promise<number> {
  const projects = await store.projectRetentions();
  await outcomes.expireCounts(projects.map((p) => ({ projectId: p.projectId, before: retentionCutoff(now, p.retentionDays) })));
  return outcomes.expireSamples(projects.map((p) => ({ projectId: p.projectId, before: retentionCutoff(now, Math.min(p.retentionDays, SAMPLE_RETENTION_DAYS)) })));
}

/** Days a project keeps raw events unless it sets another retention. */
export const DEFAULT_RETENTION_DAYS = 400;

/** Events with a timestamp below this have outlived a retention of `days` at `now`. */
export function retentionCutoff(now: number, days: number): number {
  return now - days * 86_400_000;
}

/**
 * What expires at `now`: each project's events before its own cutoff, and,
 * for every project at once, what lies before the longest retention any
 * project keeps (the default's while there is no project).
 */
export function expiryPlan(now: number, projects: ProjectRetention[]): ExpiryPlan {
  const longest = projects.length === 0 ? DEFAULT_RETENTION_DAYS : projects.reduce((most, p) => Math.max(most, p.retentionDays), 0);
  return {
    cutoffs: projects.map((p) => ({ projectId: p.projectId, before: retentionCutoff(now, p.retentionDays) })),
    allBefore: retentionCutoff(now, longest),
  };
}

/** Events deleted per step: small enough that a step never holds writers up for long. */
export const EXPIRY_BATCH = 2000;

/** How often each server looks for expired events: well inside the hour promised. */
export const RETENTION_EVERY_MS = 10 * 60_000;

/**
 * An erasure whose record no step has touched for this long was left by a
 * process that stopped; a running one touches it every step (seconds apart).
 */
export const ERASURE_STALE_MS = 10 * 60_000;

/** What a retention pass did: events expired, and erasures a stopped process had left unfinished. */
export interface RetentionPass {
  deleted: number;
  dropped: number;
  erasuresFinished: number;
  erasedEvents: number;
}

/**
 * Deletes every expired event, a short step at a time, letting other work
 * (requests, commits) run between steps.
 */
export async function expireAll(
  store: RetentionStore,
  now: number,
  opts: { batch?: number; stopping?: () => boolean } = {},
): Promise<{ deleted: number; dropped: number }> {
  const total = { deleted: 0, dropped: 0 };
  for (;;) {
    // Read at every step: a retention changed meanwhile counts from the next one.
    const step = await store.expireEvents(expiryPlan(now, await store.projectRetentions()), opts.batch ?? EXPIRY_BATCH);
    total.deleted += step.deleted;
    total.dropped += step.dropped;
    if (!step.more || opts.stopping?.()) return total;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Keys of a person's events read per step of their retention (person-events-fold.ts). */
export const KEY_EXPIRY_BATCH = 5000;

/**
 * How often a server sweeps those keys: a sweep reads every key (0.14 µs
 * a key on SQLite, 6 µs on PostgreSQL), and a key that outlives its event
 * by a day costs only its bytes, for reads skip it.
 */
export const KEY_EXPIRY_EVERY_MS = 86_400_000;

/**
 * Deletes the keys of a person's events (stores/sql/person-events.ts) whose
 * events have outlived their project's retention: a sweep of each project's
 * keys run by run and person by person, a short step at a time. Reads skip keys whose
 * events are gone; this keeps them from piling up.
 */
export async function expirePersonEventKeys(
  store: Pick<RetentionStore, 'projectRetentions'> & Pick<PersonEventsFold, 'expirePersonEventKeys'>,
  now: number,
  opts: { batch?: number; stopping?: () => boolean } = {},
): Promise<number> {
  let deleted = 0;
  for (const p of await store.projectRetentions()) {
    let after: string | null = null;
    do {
      if (opts.stopping?.() === true) return deleted;
      const step = await store.expirePersonEventKeys(p.projectId, retentionCutoff(now, p.retentionDays), after, opts.batch ?? KEY_EXPIRY_BATCH);
      deleted += step.deleted;
      after = step.next;
      await new Promise((resolve) => setImmediate(resolve));
    } while (after !== null);
  }
  return deleted;
}

/**
 * Finishes the erasures a stopped process left pending (untouched for
 * `staleMs`), one after the other. One that fails does not hold up the
 * others: each is tried, then the first failure is thrown.
 */
export async function finishErasures(
  store: Pick<ErasureStore, 'staleErasures' | 'deleteErasedEvents' | 'endErasure'>,
  staleMs: number,
  opts: { stopping?: () => boolean } = {},
): Promise<{ erasures: number; eventsDeleted: number }> {
  const total = { erasures: 0, eventsDeleted: 0 };
  let failure: { e: unknown } | null = null;
  for (const e of await store.staleErasures(staleMs)) {
    if (opts.stopping?.() === true) break;
    try {
      const r = await finishErasure(store, e, opts);
      total.eventsDeleted += r.eventsDeleted;
      if (r.done) total.erasures++;
    } catch (err) {
      failure ??= { e: err };
    }
  }
  if (failure !== null) throw failure.e;
  return total;
}

/**
 * A server's retention: a pass now and then every `everyMs`, never two at
 * once. Each pass first finishes the erasures left pending, so that no event
 * of an erased person outlives a crash by more than a pass or two; a failure
 * there is reported and does not keep events from expiring.
 */
export function startRetention(
  store: RetentionStore & Pick<ErasureStore, 'staleErasures' | 'deleteErasedEvents' | 'endErasure'> & { outcomes?: Pick<OutcomeStore, 'expireSamples' | 'expireCounts'> }
    & Partial<Pick<PersonEventsFold, 'expirePersonEventKeys'>>,
  clock: () => number,
  report: { done: (r: RetentionPass) => void; failed: (e: unknown) => void },
  everyMs = RETENTION_EVERY_MS,
): { stop: () => Promise<void> } {
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  let keysSweptAt = -Infinity;
  const pass = (): void => {
    running = running.then(async () => {
      if (stopped) return;
      const stopping = (): boolean => stopped;
      // Each part on its own: the next pass tries again, and an erasure that fails must not stop expiry.
      let erasures = { erasures: 0, eventsDeleted: 0 };
      try {
        erasures = await finishErasures(store, ERASURE_STALE_MS, { stopping });
      } catch (e) {
        report.failed(e);
      }
      try {
        if (store.outcomes !== undefined) await expireSamples(store, store.outcomes, clock());
      } catch (e) {
        report.failed(e);
      }
      try {
        const keys = store.expirePersonEventKeys;
        if (keys !== undefined && clock() - keysSweptAt >= KEY_EXPIRY_EVERY_MS) {
          keysSweptAt = clock();
          await expirePersonEventKeys({ projectRetentions: () => store.projectRetentions(), expirePersonEventKeys: keys.bind(store) }, clock(), { stopping });
        }
      } catch (e) {
        report.failed(e);
      }
      try {
        const expired = await expireAll(store, clock(), { stopping });
        report.done({ ...expired, erasuresFinished: erasures.erasures, erasedEvents: erasures.eventsDeleted });
      } catch (e) {
        // An outage of the store must not stop retention for good.
        report.failed(e);
      }
    });
  };
  const timer = setInterval(pass, everyMs).unref();
  pass();
  return {
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
