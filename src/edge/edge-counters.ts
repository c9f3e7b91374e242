import type { EdgeCountSink } from '../metrics/metrics.js';

/** What the edge met besides answered requests, counted for metrics. */
export class EdgeCounters {
  /** Requests whose client went away before they were answered. */
  clientsGone = 0;
  /** Requests Node refused before routing (malformed, headers too large, too slow), answered in the envelope. */
  clientErrors = 0;
  /** Told of each count as it moves; buildApp sets it to the metrics when it has them. */
  sink: EdgeCountSink | null = null;
  // Both a failed read and Fastify's abort hook notice one client leaving.
  private readonly gone = new WeakSet<object>();

  /** Counts `request`'s client as gone, once however many paths notice it; false if already counted. */
  countGone(request: object): boolean {
    if (this.gone.has(request)) return false;
    this.gone.add(request);
    this.clientsGone++;
    this.sink?.clientGone();
    return true;
  }

  /** Counts an answer sent before routing. */
  countRefused(method: string, status: number): void {
    this.clientErrors++;
    this.sink?.answeredBeforeRouting(method, status);
  }
}
