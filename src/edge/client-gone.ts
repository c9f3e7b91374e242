import type { IncomingMessage } from 'node:http';
import type { FastifyRequest } from 'fastify';
import type { EdgeCounters } from './edge-counters.js';

/**
 * Whether `err` is the request's connection going away (a reset, a client
 * that gave up) rather than a failure of ours. Not `raw.destroyed`: a request
 * whose body was read in full is destroyed too, and a bug after that is ours.
 */
export function isClientGone(raw: IncomingMessage, err: Error & { code?: string }): boolean {
  return raw.socket?.destroyed === true || err.code === 'ECONNRESET' || err.code === 'ERR_STREAM_PREMATURE_CLOSE';
}

/**
 * Notes a request whose client went away before it could be answered, once
 * however many paths notice it (a failed read, Fastify's abort hook): at
 * info, without a stack, counted; nothing is sent, as no one would read it.
 */
export function clientGone(req: FastifyRequest, counters: EdgeCounters): void {
  if (!counters.countGone(req.raw)) return;
  req.log.info({ method: req.method, route: req.routeOptions.url ?? 'none' }, 'client gone before the request was answered');
}
