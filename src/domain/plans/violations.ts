import type { OutcomeStore, StoredSample } from '../../stores/port-outcomes.js';
import { HOUR_MS } from '../outcomes/reports.js';

/** The codes a tracking plan answers with. */
export const PLAN_CODES = ['plan_violation', 'unplanned_event'] as const;

/** A source's plan faults of the last 24 hours: counted per outcome and code, and per event and code, each with the newest kept item. */
export interface PlanViolations {
  totals: { code: string; outcome: string; count: number }[];
  /** Per event (OTHER_EVENTS: the events past a source's cap in an hour) and code; `latest` null when no item of it is kept. */
  violations: { event: string; code: string; outcome: string; count: number; latest: StoredSample | null }[];
}

/**
 * Read from the outcome counts (every server's: per code, and per event and
 * code) and the kept items (the newest 100 of each code), which give each
 * event and code its newest.
 */
export async function planViolations(store: OutcomeStore, sourceId: string, now: number): Promise<PlanViolations> {
  const since = now - (now % HOUR_MS) - 23 * HOUR_MS;
  const until = since + 24 * HOUR_MS;
  const [rows, events, ...kept] = await Promise.all([
    store.outcomeCounts({ sourceId, since, until, bucketMs: HOUR_MS }),
    store.eventOutcomeCounts({ sourceId, since, until }),
    ...PLAN_CODES.map((code) => store.samples({ sourceId, code, since, limit: 100 })),
  ]);
  const totals = new Map<string, { code: string; outcome: string; count: number }>();
  for (const r of rows) {
    if (!(PLAN_CODES as readonly string[]).includes(r.code)) continue;
    const key = `${r.outcome}\n${r.code}`;
    const t = totals.get(key);
    if (t === undefined) totals.set(key, { code: r.code, outcome: r.outcome, count: r.count });
    else t.count += r.count;
  }
  const newest = new Map<string, StoredSample>();
  // Newest first: the first of each event and code is its newest.
  for (const s of kept.flat()) {
    const key = `${eventOf(s)}\n${s.code}\n${s.outcome}`;
    if (!newest.has(key)) newest.set(key, s);
  }
  return {
    totals: [...totals.values()].sort((a, b) => b.count - a.count),
    violations: events
      .map((e) => ({ event: e.event, code: e.code, outcome: e.outcome, count: e.count, latest: newest.get(`${e.event}\n${e.code}\n${e.outcome}`) ?? null }))
      .sort((a, b) => b.count - a.count || (a.event < b.event ? -1 : 1)),
  };
}

/** A kept item's event, or its type for an item without one ("identify", "group"). */
function eventOf(s: StoredSample): string {
  try {
    const item = JSON.parse(s.item) as { event?: unknown; type?: unknown };
    if (typeof item.event === 'string') return item.event;
    if (typeof item.type === 'string') return `(${item.type})`;
  } catch {
    // A kept item cut at its limit is not JSON.
  }
  return '(unknown)';
}
