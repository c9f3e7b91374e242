import type { PassOutcome } from '../../stores/port.js';
import type { IngestJob, ItemOutcome } from '../ingest/job.js';

/**
 * What a pass decided for its jobs' items (accepted, duplicate, dropped by
 * the plan limit or a suppression), as counts per minute, outcome and code
 * of the pass's source: written with the items (PassWrites.outcomes), so
 * these counts are exact. Only jobs that were written are given (a dry run
 * rolls back whatever it wrote).
 */
export function writtenOutcomes(jobs: readonly IngestJob[], outcomes: readonly ItemOutcome[][]): PassOutcome[] {
  const counts = new Map<string, PassOutcome>();
  const add = (minute: number, outcome: PassOutcome['outcome'], code: string, n: number) => {
    if (n === 0) return;
    const key = `${minute}\n${outcome}\n${code}`;
    const c = counts.get(key);
    if (c !== undefined) c.count += n;
    else counts.set(key, { minute, outcome, code, count: n });
  };
  jobs.forEach((job, i) => {
    if (job.counted === false) return;
    const minute = job.receivedAt - (job.receivedAt % 60_000);
    // Counted here, then added once a job: a job costs a map lookup per outcome it had, not per item.
    let accepted = 0;
    let duplicate = 0;
    for (const o of outcomes[i]!) {
      if (o.status === 'accepted') accepted++;
      else if (o.status === 'duplicate') duplicate++;
      else if (o.status === 'dropped') add(minute, 'dropped', o.reason, 1);
      // Refused by the store (a sixth group type, an illegal merge): counted with the checks' refusals, by the ledger.
    }
    add(minute, 'accepted', '', accepted);
    add(minute, 'duplicate', '', duplicate);
  });
  return [...counts.values()];
}
