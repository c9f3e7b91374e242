import type { OutcomeCount } from '../../stores/port-outcomes.js';
import type { IngestJob } from '../ingest/job.js';
import type { JobResult } from '../ingest/pass.js';

/**
 * What the store decided for the items of a pass's jobs (accepted,
 * duplicate, dropped by the plan limit or a suppression), as counts per
 * source, minute, outcome and code: written in the same transaction as the
 * items, so these counts are exact. A job its key no longer allowed wrote
 * nothing and counts nothing; a dry run is never counted.
 */
export function writtenCounts(jobs: readonly IngestJob[], results: readonly JobResult[]): OutcomeCount[] {
  const counts = new Map<string, OutcomeCount>();
  const add = (job: IngestJob, outcome: OutcomeCount['outcome'], code: string, n: number) => {
    if (n === 0) return;
    const minute = job.receivedAt - (job.receivedAt % 60_000);
    const key = `${job.sourceId}\n${minute}\n${outcome}\n${code}`;
    const c = counts.get(key);
    if (c !== undefined) c.count += n;
    else counts.set(key, { projectId: job.projectId, sourceId: job.sourceId, minute, outcome, code, count: n });
  };
  jobs.forEach((job, i) => {
    const r = results[i];
    if (job.dryRun || !Array.isArray(r)) return;
    // Counted here, then added once a job: a job costs a map lookup per outcome it had, not per item.
    let accepted = 0;
    let duplicate = 0;
    for (const o of r) {
      if (o.status === 'accepted') accepted++;
      else if (o.status === 'duplicate') duplicate++;
      else add(job, 'dropped', o.reason, 1);
    }
    add(job, 'accepted', '', accepted);
    add(job, 'duplicate', '', duplicate);
  });
  return [...counts.values()];
}
