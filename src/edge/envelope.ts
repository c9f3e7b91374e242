import type { FastifyReply, FastifyRequest } from 'fastify';
import { DEFAULT_RETRY_AFTER, REQUEST_ERRORS, type RequestErrorCode } from '../errors/codes.js';
import type { ItemError } from '../domain/items/fields/field-error.js';
import type { Refusal } from '../domain/intake/refusal.js';
import type { ShapedAnswer, WholeRefusal } from '../intakes/intake.js';

/** The body of every non-2xx answer. */
export interface ErrorEnvelope {
  error: {
    code: RequestErrorCode;
    message: string;
    docs_url: string;
    request_id: string;
    /** Item errors, for all_items_invalid and strict_item_invalid. */
    errors?: ItemError[];
  };
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Base URL of this deployment, for docs links. */
    inletBaseUrl: string;
  }
  interface FastifyRequest {
    /** The code a refused request was answered with, for the request log line. */
    refusedWith: RequestErrorCode | null;
  }
}

export function envelope(baseUrl: string, requestId: string, r: Refusal): ErrorEnvelope {
  const body: ErrorEnvelope = {
    error: {
      code: r.code,
      message: r.message ?? REQUEST_ERRORS[r.code].message,
      docs_url: `${baseUrl}/docs/api#${r.code}`,
      request_id: requestId,
    },
  };
  if (r.errors !== undefined) body.error.errors = r.errors;
  return body;
}

/** Answers a refusal with its status, headers and the envelope, or in the shape an intake's SDKs read (`shaped`). */
export function sendRefusal(req: FastifyRequest, reply: FastifyReply, r: Refusal, shaped?: (whole: WholeRefusal) => ShapedAnswer): void {
  req.refusedWith = r.code;
  // Set here too: Fastify answers some errors before the onRequest hook runs.
  reply.header('Request-Id', req.id);
  const retryAfter = DEFAULT_RETRY_AFTER[r.code];
  if (retryAfter !== undefined) reply.header('Retry-After', String(retryAfter));
  if (r.headers) reply.headers(r.headers);
  const status = REQUEST_ERRORS[r.code].status;
  if (shaped === undefined) {
    reply.code(status).send(envelope(req.server.inletBaseUrl, req.id, r));
    return;
  }
  const answer = shaped({ code: r.code, status, message: r.message ?? REQUEST_ERRORS[r.code].message });
  reply.code(answer.status).send(answer.body);
}
