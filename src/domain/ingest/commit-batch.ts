import type { IngestJob, ItemOutcome } from './job.js';

/** A job waiting for its transaction, with the request that waits on it. */
export interface Pending {
  job: IngestJob;
  resolve: (o: ItemOutcome[]) => void;
  reject: (e: unknown) => void;
}

/**
 * Takes the jobs of the next commit off the queue: all that wait, up to about
 * `maxItems` items (a job bigger than that goes alone). The rest wait.
 */
export function takeCommit(queue: Pending[], maxItems: number): Pending[] {
  let items = 0;
  let n = 0;
  while (n < queue.length && (n === 0 || items + queue[n]!.job.items.length <= maxItems)) {
    items += queue[n]!.job.items.length;
    n++;
  }
  return queue.splice(0, n);
}

/**
 * Splits a commit's jobs into batches written in one pass each: the jobs of
 * one project and source, in arrival order.
 */
export function batchJobs(commit: Pending[]): Pending[][] {
  const batches = new Map<string, Pending[]>();
  for (const p of commit) {
    const key = `${p.job.projectId}\u0000${p.job.sourceId}`;
    const b = batches.get(key);
    if (b === undefined) batches.set(key, [p]);
    else b.push(p);
  }
  return [...batches.values()];
}
