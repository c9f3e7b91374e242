import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { newId } from '../domain/ids.js';
import { DEFAULT_RETRY_AFTER, REQUEST_ERRORS } from '../errors/codes.js';
import type { EdgeCounters } from './edge-counters.js';
import { envelope } from './envelope.js';
import type { Refusal } from './request-checks.js';
import type { ShapedAnswer } from '../intakes/intake.js';
import { INTAKES } from '../intakes/registry.js';

/**
 * What Node's parser and timeouts refuse, before any route: said in the
 * envelope like every other answer. The messages are ours, never the
 * parser's text, which can quote what the client sent.
 */
export function clientErrorRefusal(err: NodeJS.ErrnoException): Refusal {
  switch (err.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { code: 'request_timeout' };
    case 'HPE_HEADER_OVERFLOW':
      return { code: 'headers_too_large' };
    case 'HPE_INVALID_METHOD':
      return { code: 'bad_request', message: 'The request method is not one HTTP defines; send the batch with POST.' };
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
      return { code: 'bad_request', message: 'Content-Length is given more than once, or together with Transfer-Encoding; send exactly one of them, once.' };
    case 'HPE_INVALID_CONTENT_LENGTH':
      return { code: 'bad_request', message: 'Content-Length is not a whole number of bytes; send the length of the body.' };
    case 'HPE_INVALID_TRANSFER_ENCODING':
      return { code: 'bad_request', message: 'Transfer-Encoding is not supported; send the body with Content-Length, or chunked.' };
    default:
      return { code: 'bad_request' };
  }
}

/**
 * The refusal in the shape of the intake whose route the request was for,
 * when that intake has one (Mixpanel's, Amplitude's SDKs read only theirs):
 * its target read from what the parser had of the request line (its path
 * comes first, so a target cut short by the header limit still names it).
 */
export function shapedFor(rawPacket: Buffer | undefined, r: Refusal, parsed?: { method?: string; url?: string }): ShapedAnswer | undefined {
  let method: string;
  let url: string;
  if (parsed?.method !== undefined && parsed.url !== undefined) {
    ({ method, url } = parsed as { method: string; url: string });
  } else {
    if (rawPacket === undefined) return undefined;
    const line = /^([A-Z]+) ([^\s]+)/.exec(rawPacket.toString('latin1', 0, Math.min(rawPacket.length, 4096)));
    if (line === null) return undefined;
    [, method, url] = line as unknown as [string, string, string];
  }
  const shape = INTAKES.find((i) => i.route.owns(url))?.answers.shape;
  if (shape === undefined) return undefined;
  const q = url.indexOf('?');
  const spec = REQUEST_ERRORS[r.code];
  return shape.refused(
    { code: r.code, status: spec.status, message: r.message ?? spec.message },
    { method, path: q === -1 ? url : url.slice(0, q), query: q === -1 ? '' : url.slice(q + 1), contentType: undefined },
  );
}

/** The raw HTTP/1.1 answer for a refusal on a connection no request object owns; in an intake's own shape when given one. */
export function rawAnswer(baseUrl: string, requestId: string, r: Refusal, shaped?: ShapedAnswer): string {
  const spec = REQUEST_ERRORS[r.code];
  const text = shaped !== undefined && typeof shaped.body === 'string';
  const body = shaped === undefined ? JSON.stringify(envelope(baseUrl, requestId, r)) : text ? (shaped.body as string) : JSON.stringify(shaped.body);
  const status = shaped?.status ?? spec.status;
  const headers: Record<string, string> = {
    'Content-Type': text ? 'text/plain; charset=utf-8' : 'application/json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    'Request-Id': requestId,
    Connection: 'close',
  };
  const retryAfter = DEFAULT_RETRY_AFTER[r.code];
  if (retryAfter !== undefined) headers['Retry-After'] = String(retryAfter);
  Object.assign(headers, r.headers);
  const lines = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
  return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${lines}\r\n${body}`;
}

/** Fastify's clientErrorHandler: our envelope and a Request-Id instead of Fastify's own body. */
export function clientErrorHandler(counters: EdgeCounters) {
  return function onClientError(this: FastifyInstance, err: NodeJS.ErrnoException, socket: Socket): void {
    // A reset connection has no one left to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) {
      socket.destroy();
      return;
    }
    const refusal = clientErrorRefusal(err);
    const requestId = newId('req');
    counters.countRefused('none', REQUEST_ERRORS[refusal.code].status);
    this.log.info({ reqId: requestId, status: REQUEST_ERRORS[refusal.code].status, code: refusal.code, parser: err.code }, 'request refused before routing');
    // A request already answered in part (headers sent) cannot get a second answer.
    const inProgress = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    // A request whose headers were read but not its body in time (408) has no packet to read its target from: Node's parser holds it.
    const incoming = (socket as Socket & { parser?: { incoming?: { method?: string; url?: string } } }).parser?.incoming;
    const shaped = shapedFor((err as NodeJS.ErrnoException & { rawPacket?: Buffer }).rawPacket, refusal, incoming ?? undefined);
    if (socket.writable && inProgress?.headersSent !== true) socket.write(rawAnswer(this.inletBaseUrl, requestId, refusal, shaped));
    socket.destroySoon();
  };
}

/**
 * CONNECT asks for a tunnel, which this server never opens. Node closes such
 * connections without a word unless someone listens; answer it instead.
 */
export function refuseConnect(app: FastifyInstance, counters: EdgeCounters) {
  return (_req: unknown, socket: Socket): void => {
    counters.countRefused('CONNECT', REQUEST_ERRORS.method_not_allowed.status);
    const refusal: Refusal = { code: 'method_not_allowed', message: 'CONNECT is not allowed here; send the batch with POST.', headers: { Allow: 'POST' } };
    socket.write(rawAnswer(app.inletBaseUrl, newId('req'), refusal));
    socket.destroySoon();
  };
}
