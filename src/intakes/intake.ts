/**
 * What an intake is: a wire format Inlet takes items in (its own batch API,
 * Segment's, PostHog's). An intake declares its routes and where its key is,
 * maps its bodies to items and Inlet's verdict to its answers; it runs
 * nothing itself. The one intake pipeline (edge/intake-pipeline.ts, its rules in
 * domain/intake/run.ts) takes
 * every request of every intake through the same steps, in the order of
 * edge/intake-checks.ts, and answers it at one exit. A new intake is a folder
 * beside the others and a line in registry.ts (docs/design.md, "Intakes").
 */
import type { BearerResult } from '../domain/keys.js';
import type { WindowGroup } from '../domain/limits/policies.js';
import type { WireMap, WireShape } from '../pipeline/foreign-body.js';
import type { Refusal } from '../domain/intake/refusal.js';
import type { ImportWindow } from '../domain/items/fields/timestamp.js';
import type { Project } from '../stores/port.js';
import type { IntakeAnswers, RunOptions } from '../domain/intake/run.js';

export type BodyEncoding = 'identity' | 'gzip';

/** What a request's query asks of the pipeline: the rules' options, and how to read its body. */
export interface QueryOptions extends RunOptions {
  /** The body's compression when the intake names it in the query (PostHog's ?compression=gzip-js); undefined leaves it to Content-Encoding. */
  encoding: BodyEncoding | undefined;
}

/** The options of a request whose query asks nothing: shared, never written to. */
export const NO_OPTIONS: Readonly<QueryOptions> = Object.freeze({ validate: false, strict: false, encoding: undefined });

/**
 * What differs between the endpoints that take items as to the project's
 * limits and timestamps: which windows count the items and how far back an
 * item's timestamp may go.
 */
export interface EndpointProfile {
  path: string;
  /** The project windows the items count in. */
  windows: WindowGroup;
  /** The timestamp rule: required and back to the retention for imports; absent for live batches. */
  importWindow(project: Project): ImportWindow | undefined;
}

export interface Intake {
  /** Its name: the folder's, and how a check thread finds its WireMap. */
  name: string;
  /**
   * Its routes: Fastify patterns registered for every method (a method other
   * than `method` is answered 405 by the method check, in its turn), and
   * whether a request's target (path and query) is one of its own, for the
   * requests Fastify answers before any route (an unknown method, a
   * Content-Type it cannot parse) that still get the intake's checks.
   */
  route: { method: 'POST'; paths: readonly string[]; owns(url: string): boolean };
  /** The path check: null for a path of its own; else its 404 (or the batch API's 410 for a retired version). */
  checkPath(path: string, host: string, trackerHosts: Set<string>, retired: Set<string>): Refusal | null;
  /** Where its key is: the Authorization header as it reads it, and whether its SDKs may put the key in the body instead. */
  key: {
    header(authorization: string | undefined): BearerResult;
    /** Null: in the header only. Else the key may be in the body, found on a check thread; the message of a missing_key names every place. */
    inBody: { missingKey: string } | null;
  };
  /** Its query parameters read (validate, strict, a compression); null: the query is not read. */
  query: ((query: string) => QueryOptions | Refusal) | null;
  /** Whether a body of any Content-Type is read (its SDKs send gzip or text/plain without a JSON one): the JSON check decides. */
  anyContentType: boolean;
  /** The limits and timestamp rule of a request to one of its paths. */
  profile(path: string): EndpointProfile;
  /** Its bodies when they are in another API's shape: mapped to items, one per message; null for the batch API's own `{items: [...]}`. */
  wire: { map: WireMap; shape(path: string): WireShape } | null;
  answers: IntakeAnswers;
}
