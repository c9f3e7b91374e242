/** @inlet/node: send events to Inlet from Node.js servers and serverless functions. */
export { Inlet } from './client.js';
export type { InletOptions, RetryInfo } from './options.js';
export type { Clock, ClockTimer } from './clock.js';
export type { RateLimitWindow } from './pacer.js';
export {
  ClosedError,
  QueueFullError,
  type AliasMessage,
  type GroupMessage,
  type IdentifyMessage,
  type ItemError,
  type ItemResult,
  type Json,
  type Outcome,
  type Report,
  type TrackMessage,
  type WireItem,
} from './types.js';
