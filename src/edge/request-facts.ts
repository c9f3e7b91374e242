import type { RequestFacts } from '../domain/intake/facts.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Filled in as the request is handled; null until its first hook. */
    facts: RequestFacts | null;
  }
}
