import type { WindowGroup } from '../domain/limits/policies.js';
import type { ImportWindow } from '../pipeline/timestamp.js';
import type { Project } from '../stores/port.js';

/**
 * What differs between the two endpoints that take batches. Everything else
 * (the checks and their order, the answers, idempotency, people, metering)
 * is one route: a profile only says which windows count the items and how
 * far back an item's timestamp may go.
 */
export interface EndpointProfile {
  path: string;
  /** The project windows the items count in. */
  windows: WindowGroup;
  /** The timestamp rule: required and back to the retention for imports; absent for live batches. */
  importWindow(project: Project): ImportWindow | undefined;
}

/** Live events, up to 7 days old. */
export const BATCH_PATH = '/api/v1/batch';
/** Historical events, back to the project's retention. */
export const IMPORT_PATH = '/api/v1/import';

/** The endpoints by path: live events, and historical import. */
export const ENDPOINTS: ReadonlyMap<string, EndpointProfile> = new Map([
  [BATCH_PATH, { path: BATCH_PATH, windows: 'batch', importWindow: () => undefined }],
  [IMPORT_PATH, { path: IMPORT_PATH, windows: 'import', importWindow: (p: Project) => ({ retentionDays: p.retentionDays }) }],
]);
