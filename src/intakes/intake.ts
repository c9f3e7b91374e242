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
import type { ItemError } from '../domain/items/fields/field-error.js';
import type { RequestErrorCode } from '../errors/codes.js';
import type { ImportWindow } from '../domain/items/fields/timestamp.js';
import type { Project } from '../stores/port.js';
import type { IntakeAnswers, RunOptions } from '../domain/intake/run.js';

export type BodyEncoding = 'identity' | 'gzip';

/** The methods an intake may take items by. */
export type HttpMethod = 'GET' | 'POST';

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

/** How an intake answers: as the rules need it (domain/intake/run.ts), and in its own shape, if it has one. */
export interface IntakeAnswering extends IntakeAnswers {
  /**
   * Answers in another API's shape, for SDKs that read only that (Mixpanel's
   * `1`/`0`, Amplitude's `{"code": …}`): every answer of its routes, the
   * refusals of whole requests included. Absent: Inlet's answer and envelope.
   */
  shape?: AnswerShape;
}

/** The request an answer is for, as sent: Mixpanel's verbose=1, or its data= rather than JSON, asks for another answer. */
export interface AnswerTarget {
  method: string;
  path: string;
  query: string;
  contentType: string | undefined;
}

/** An answer as an intake's SDKs read it: its status and body (a string is sent as text). */
export interface ShapedAnswer {
  status: number;
  body: unknown;
}

/** What became of a request's items, for an intake's own answer to it. */
export interface TakenAnswer {
  /** Items (messages) in the request. */
  count: number;
  /** Stored now or before (a repeat of an insert_id). */
  kept: number;
  /** Refused items' errors, in index order (an item's errors together). */
  errors: ItemError[];
  /** The insert_id each refused item sent, by its index, when it sent one. */
  insertIds: ReadonlyMap<number, string>;
  /** The body's size in bytes, as read. */
  bytes: number;
}

/** A request refused whole: the code, its status and message, as the envelope would carry them. */
export interface WholeRefusal {
  code: RequestErrorCode;
  status: number;
  message: string;
}

export interface AnswerShape {
  taken(answer: TakenAnswer, target: AnswerTarget): ShapedAnswer;
  refused(refusal: WholeRefusal, target: AnswerTarget): ShapedAnswer;
}

export interface Intake {
  /** Its name: the folder's, and how a check thread finds its WireMap. */
  name: string;
  /**
   * Its routes: Fastify patterns registered for every method (a method other
   * than its `methods` is answered 405 by the method check, in its turn), and
   * whether a request's target (path and query) is one of its own, for the
   * requests Fastify answers before any route (an unknown method, a
   * Content-Type it cannot parse) that still get the intake's checks.
   */
  route: { methods: readonly HttpMethod[]; paths: readonly string[]; owns(url: string): boolean };
  /** Whether a GET's query is read as its body (Mixpanel's `data=`, which its SDKs send either way). */
  queryAsBody?: boolean;
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
  answers: IntakeAnswering;
  /**
   * A path another intake's route owns that this intake's API also uses, and
   * how its bodies are told apart there (Amplitude's batch API at PostHog's
   * /batch): such a body, once its key is found in it, is taken by this
   * intake from then on. Absent: its paths are its own.
   */
  claims?: { path: string; isMine(json: unknown): boolean };
}
