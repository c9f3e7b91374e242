import type { Store } from '../../stores/port.js';
import type { ItemError } from '../items/fields/field-error.js';
import type { ShownItem } from '../items/enriched-item.js';
import { ENRICHMENT_KEYS } from '../items/fields/enrich.js';
import { isPlainObject } from '../items/fields/text.js';
import { type ReadyPlan, askedVersion } from './check.js';

/** Faults `plan check` lists at most, the first found. */
const LISTED = 20;
const PAGE = 1000;

/** What enforcing a plan would have refused of a source's period: its stored events and its kept samples. */
export interface PlanCheckReport {
  checked: number;
  would_refuse: number;
  by_code: Record<string, number>;
  by_event: Record<string, number>;
  samples: { from: 'event' | 'sample'; id: string; event: string | null; code: string; field: string; message: string }[];
}

/**
 * Holds a source's stored events (timestamps in [since, until)) and the
 * items it kept as samples since then (dropped or warned, or refused by a
 * plan: those its own checks refused would be refused anyway) to a compiled
 * plan, as a source enforcing it would have: per code and per event.
 * A stored event's properties are held without what enrichment added.
 */
export async function checkPeriod(
  store: Store,
  q: { sourceId: string; since: number; until: number; plan: ReadyPlan; progress?: (checked: number) => void },
): Promise<PlanCheckReport> {
  const report: PlanCheckReport = { checked: 0, would_refuse: 0, by_code: {}, by_event: {}, samples: [] };
  const count = (from: 'event' | 'sample', id: string, event: string | null, fault: ItemError | null) => {
    report.checked++;
    if (fault === null) return;
    report.would_refuse++;
    report.by_code[fault.code] = (report.by_code[fault.code] ?? 0) + 1;
    const name = event ?? '(identify or group)';
    report.by_event[name] = (report.by_event[name] ?? 0) + 1;
    if (report.samples.length < LISTED) report.samples.push({ from, id, event, code: fault.code, field: fault.field, message: fault.message });
  };
  let after = null;
  for (;;) {
    const page = await store.eventPages.eventPage({ sourceId: q.sourceId, order: 'asc', after, since: q.since, until: q.until, limit: PAGE });
    for (const e of page.events) {
      const properties = { ...e.properties };
      for (const key of ENRICHMENT_KEYS) delete properties[key];
      count('event', e.id, e.event, q.plan.check(asItem({ type: 'track', event: e.event, properties }), undefined));
    }
    q.progress?.(report.checked);
    if (page.next === null) break;
    after = page.next;
  }
  let beforeId: number | undefined;
  for (;;) {
    const samples = await store.outcomes.samples({ sourceId: q.sourceId, since: q.since, limit: PAGE, ...(beforeId === undefined ? {} : { beforeId }) });
    for (const s of samples) {
      if (s.receivedAt >= q.until || s.cut) continue;
      if (s.outcome === 'refused' && s.code !== 'unplanned_event' && s.code !== 'plan_violation') continue;
      const kept = sampleItem(s.item);
      if (kept === null) continue;
      count('sample', String(s.id), kept.item.event, q.plan.check(kept.item, askedVersion(kept.raw)));
    }
    q.progress?.(report.checked);
    if (samples.length < PAGE) break;
    beforeId = samples[samples.length - 1]!.id;
  }
  return report;
}

/** An item as the plan's check reads it: its type, event or group type, and properties (an identify's set_once too). */
function asItem(i: { type: 'track'; event: string; properties: Record<string, unknown> } | { type: 'identify'; properties: Record<string, unknown>; setOnce: Record<string, unknown> | null } | { type: 'group'; groupType: string; properties: Record<string, unknown> }): ShownItem {
  return { index: 0, event: null, ...i } as unknown as ShownItem;
}

/** A kept item (the batch API's shape, as samples keep it) for the plan's check, and as kept; null when it is not one a plan checks. */
function sampleItem(text: string): { item: ShownItem; raw: unknown } | null {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isPlainObject(raw)) return null;
  const properties = isPlainObject(raw.properties) ? { ...raw.properties } : {};
  delete properties.$user_agent;
  const type = raw.type ?? 'track';
  if (type === 'track' && typeof raw.event === 'string') return { item: asItem({ type: 'track', event: raw.event, properties }), raw };
  if (type === 'identify') return { item: asItem({ type: 'identify', properties, setOnce: isPlainObject(raw.set_once) ? raw.set_once : null }), raw };
  if (type === 'group' && typeof raw.group_type === 'string') return { item: asItem({ type: 'group', groupType: raw.group_type, properties }), raw };
  return null;
}
