/** What the edge met besides answered requests, counted for metrics. */
export class EdgeCounters {
  /** Requests whose connection closed or failed before their body was read: the client went away. */
  clientsGone = 0;
  /** Requests Node refused before routing (malformed, headers too large, too slow), answered in the envelope. */
  clientErrors = 0;
}
