import type { FastifyInstance } from 'fastify';
import { sendRefusal } from './envelope.js';
import type { NotReady, Readiness } from './readiness.js';

/** Paths of the operations endpoints; they answer even while the server stops. */
export const OPS_PATHS = new Set(['/healthz', '/readyz']);

const NOT_READY: Record<NotReady, string> = {
  stopping: 'Not ready: this server is stopping. Send requests to another server.',
  store_unavailable: 'Not ready: the store did not answer a trivial query within 1 s. Send requests to another server.',
};

/** GET /healthz (the process serves) and GET /readyz (send it traffic), for load balancers. */
export function opsRoutes(readiness: Readiness) {
  return async (app: FastifyInstance): Promise<void> => {
    app.get('/healthz', async (_req, reply) => reply.header('Cache-Control', 'no-store').send({ status: 'ok' }));
    app.get('/readyz', async (req, reply) => {
      reply.header('Cache-Control', 'no-store');
      const why = await readiness.check();
      if (why === null) return reply.send({ status: 'ready' });
      // Our envelope, as every non-2xx answer: the message says which check failed, never more.
      sendRefusal(req, reply, { code: 'collection_unavailable', message: NOT_READY[why] });
      return reply;
    });
  };
}
