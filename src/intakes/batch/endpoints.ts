import type { Project } from '../../stores/port.js';
import type { EndpointProfile } from '../intake.js';

/**
 * What differs between the two endpoints that take batches. Everything else
 * (the checks and their order, the answers, idempotency, people, metering)
 * is one route: a profile only says which windows count the items and how
 * far back an item's timestamp may go.
 */

/** Live events, up to 7 days old. */
export const BATCH_PATH = '/api/v1/batch';
/** Historical events, back to the project's retention. */
export const IMPORT_PATH = '/api/v1/import';

/** Live events: the profile of every intake's requests but the import's. */
export const LIVE: EndpointProfile = { path: BATCH_PATH, windows: 'batch', importWindow: () => undefined };

/** The endpoints by path: live events, and historical import. */
export const ENDPOINTS: ReadonlyMap<string, EndpointProfile> = new Map([
  [BATCH_PATH, LIVE],
  [IMPORT_PATH, { path: IMPORT_PATH, windows: 'import', importWindow: (p: Project) => ({ retentionDays: p.retentionDays }) }],
]);
