import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Metrics } from '../metrics/metrics.js';
import { clientGone } from './client-gone.js';
import type { EdgeCounters } from './edge-counters.js';
import { type ItemTally, total } from '../domain/intake/facts.js';

/**
 * One log line and the metrics of every request, once it is answered. The
 * line holds ids, the route, counts and codes: never a header, a key, a body,
 * a property or a trait.
 */
export function observeRequests(app: FastifyInstance, metrics: Metrics | undefined, counters: EdgeCounters): void {
  app.addHook('onResponse', async (req, reply) => {
    const route = req.routeOptions.url ?? 'none';
    const facts = req.facts;
    const items = facts?.items ?? null;
    req.log.info(
      {
        method: req.method,
        route,
        project: facts?.projectId ?? undefined,
        source: facts?.sourceId ?? undefined,
        status: reply.statusCode,
        code: req.refusedWith ?? undefined,
        items: items === null ? undefined : counts(items, facts?.warned),
        dry_run: facts?.dryRun || undefined,
        duration_ms: Math.round(reply.elapsedTime),
      },
      'request',
    );
    if (metrics !== undefined) count(metrics, req, route, reply.statusCode, reply.elapsedTime / 1000);
  });
  // Counted (and logged) once with the client gone that a failed read notices, through the counters.
  app.addHook('onRequestAbort', async (req) => clientGone(req, counters));
}

/** The line's counts, and the codes it refused or dropped items with, each with its count (none when there were none). */
function counts(t: ItemTally, warned: Map<string, number> | undefined) {
  const line: { accepted: number; duplicate: number; dropped: number; refused: number; warned?: number; codes?: Record<string, number>; warnings?: Record<string, number> } = {
    accepted: t.accepted, duplicate: t.duplicate, dropped: total(t.dropped), refused: total(t.refused),
  };
  if (t.dropped.size + t.refused.size > 0) line.codes = Object.fromEntries([...t.refused, ...t.dropped]);
  // Items kept with a tracking plan's warning are counted among the accepted too; their codes are named apart.
  if (warned !== undefined && warned.size > 0) {
    line.warned = total(warned);
    line.warnings = Object.fromEntries(warned);
  }
  return line;
}

function count(m: Metrics, req: FastifyRequest, route: string, status: number, seconds: number): void {
  m.requests.inc({ route, method: req.method, status: String(status) });
  m.requestDuration.observe({ route }, seconds);
  const facts = req.facts;
  if (facts === null) return;
  if (facts.limitPolicy !== null) m.rateLimited.inc({ policy: facts.limitPolicy });
  // A dry run stores nothing: its items are not counted.
  if (facts.items === null || facts.dryRun) return;
  const t = facts.items;
  if (t.accepted > 0) m.items.inc({ outcome: 'accepted' }, t.accepted);
  if (t.duplicate > 0) m.items.inc({ outcome: 'duplicate' }, t.duplicate);
  for (const [reason, n] of t.dropped) m.itemsDropped.inc({ reason }, n);
  for (const [code, n] of t.refused) m.itemsRefused.inc({ code }, n);
}
