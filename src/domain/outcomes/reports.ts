import { PLAN_CODES } from '../plans/violations.js';
import type { Outcome, OutcomeStore, StoredSample } from '../../stores/port-outcomes.js';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** The outcomes in the order every view lists them. */
export const OUTCOMES: readonly Outcome[] = ['accepted', 'duplicate', 'dropped', 'refused'];

/** One hour of a source's items by outcome. */
export interface HourOutcomes {
  at: number;
  counts: Record<Outcome, number>;
}

/** A code of the period with its count, and the newest item kept under it (none when none is kept). */
export interface CodeRow {
  outcome: 'dropped' | 'refused' | 'warned';
  code: string;
  count: number;
  latest: StoredSample | null;
  /** A tracking plan's codes: the items by event, most first (none read by sourceOutcomeCounts). */
  events?: { event: string; count: number }[];
}

/** What the source page's Item outcomes shows: the last 24 hours by hour, their totals, and the codes. */
export interface SourceOutcomes {
  hours: HourOutcomes[];
  totals: Record<Outcome, number>;
  codes: CodeRow[];
}

const zero = (): Record<Outcome, number> => ({ accepted: 0, duplicate: 0, dropped: 0, refused: 0, warned: 0 });

/**
 * A source's last 24 hours (the current hour included) from the counts alone,
 * no kept item read (`latest` null): what the source page refreshes while open.
 */
export async function sourceOutcomeCounts(store: OutcomeStore, sourceId: string, now: number): Promise<SourceOutcomes> {
  const first = now - (now % HOUR_MS) - 23 * HOUR_MS;
  const rows = await store.outcomeCounts({ sourceId, since: first, until: first + 24 * HOUR_MS, bucketMs: HOUR_MS });
  const hours = Array.from({ length: 24 }, (_, i) => ({ at: first + i * HOUR_MS, counts: zero() }));
  const totals = zero();
  const byCode = new Map<string, CodeRow>();
  for (const r of rows) {
    hours[Math.floor((r.at - first) / HOUR_MS)]!.counts[r.outcome] += r.count;
    totals[r.outcome] += r.count;
    if (r.outcome === 'accepted' || r.outcome === 'duplicate') continue;
    const key = `${r.outcome}\n${r.code}`;
    const row = byCode.get(key);
    if (row === undefined) byCode.set(key, { outcome: r.outcome, code: r.code, count: r.count, latest: null });
    else row.count += r.count;
  }
  const codes = [...byCode.values()].sort((a, b) => b.count - a.count || (a.code < b.code ? -1 : 1));
  return { hours, totals, codes };
}

/**
 * A source's last 24 hours (the current hour included), read from the counts:
 * no event is read; with the newest item kept under each code, and a tracking
 * plan's codes by event.
 */
export async function sourceOutcomes(store: OutcomeStore, sourceId: string, now: number): Promise<SourceOutcomes> {
  const o = await sourceOutcomeCounts(store, sourceId, now);
  const first = now - (now % HOUR_MS) - 23 * HOUR_MS;
  // One small read per code: a source has a few codes at most.
  const [events] = await Promise.all([
    o.codes.some((c) => (PLAN_CODES as readonly string[]).includes(c.code)) ? store.eventOutcomeCounts({ sourceId, since: first, until: first + 24 * HOUR_MS }) : [],
    ...o.codes.map(async (c) => {
      c.latest = (await store.samples({ sourceId, code: c.code, limit: 1 }))[0] ?? null;
    }),
  ]);
  for (const c of o.codes) {
    const mine = events.filter((e) => e.outcome === c.outcome && e.code === c.code);
    if (mine.length > 0) c.events = mine.map((e) => ({ event: e.event, count: e.count })).sort((a, b) => b.count - a.count || (a.event < b.event ? -1 : 1));
  }
  return o;
}

/** Each project's share of items refused in the last 24 hours; null where it had no items. */
export async function refusalShares(store: OutcomeStore, projectIds: string[], now: number): Promise<Map<string, number | null>> {
  const totals = await store.projectOutcomeTotals(projectIds, now - DAY_MS);
  const shares = new Map<string, number | null>();
  for (const id of projectIds) {
    const t = totals.get(id);
    let all = 0;
    for (const n of t?.values() ?? []) all += n;
    shares.set(id, all === 0 ? null : (t!.get('refused') ?? 0) / all);
  }
  return shares;
}

/** Items stored per UTC day (accepted), for the project chart: read from the counts, never from the events. */
export async function storedPerDay(store: OutcomeStore, projectId: string, from: number, to: number): Promise<{ day: string; events: number }[]> {
  const rows = await store.outcomeCounts({ projectId, since: from, until: to, bucketMs: DAY_MS });
  const byDay = new Map<string, number>();
  for (const r of rows) {
    if (r.outcome !== 'accepted') continue;
    const day = new Date(r.at).toISOString().slice(0, 10);
    byDay.set(day, (byDay.get(day) ?? 0) + r.count);
  }
  return [...byDay].map(([day, events]) => ({ day, events }));
}
