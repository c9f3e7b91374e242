import type { ItemError } from '../domain/items/fields/field-error.js';
import type { ReadyPlan } from '../domain/plans/check.js';
import { checkItems } from './check-batch.js';

/** One line of `inlet plan test`: what a source enforcing the plan would answer for it. */
export interface LineVerdict {
  line: number;
  outcome: 'accepted' | 'refused';
  /** As an answer's errors name them, without the index: each line is an item of its own. */
  errors: Omit<ItemError, 'index'>[];
}

/**
 * Each NDJSON line an item in the batch API's shape, checked as a batch of
 * its own would be on a source enforcing the plan: its own checks first (a
 * malformed item keeps its own code), then the plan's. Blank lines are
 * skipped; a line that is not JSON is refused as `invalid_item`.
 */
export function testLines(text: string, plan: ReadyPlan, now: number): LineVerdict[] {
  const out: LineVerdict[] = [];
  const ctx = { now, recordIp: false, source: { id: 'plan-test', filterBots: false } };
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    let item: unknown;
    try {
      item = JSON.parse(raw);
    } catch {
      out.push({ line: i + 1, outcome: 'refused', errors: [{ code: 'invalid_item', field: 'item', message: 'The line is not JSON: write one item a line.' }] });
      return;
    }
    const checked = checkItems([item], ctx);
    const errors = checked.errors.length > 0 ? checked.errors : plan.checkItems(checked.items, [item]);
    out.push({ line: i + 1, outcome: errors.length === 0 ? 'accepted' : 'refused', errors: errors.map(({ index: _index, ...e }) => e) });
  });
  return out;
}
