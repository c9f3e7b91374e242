/**
 * The Amplitude-compatible endpoints (/2/httpapi, and /2/batch for the batch
 * API), so code written for `@amplitude/analytics-node` works by setting its
 * serverUrl: the key where the SDK puts its API key ("api_key" in the body),
 * and answers as the SDK reads them (answers.ts).
 */
import { echoed } from '../../domain/echo.js';
import { readBearer } from '../../domain/keys.js';
import type { WireShape } from '../../pipeline/foreign-body.js';
import type { Refusal } from '../../domain/intake/refusal.js';
import { LIVE } from '../batch/endpoints.js';
import type { Intake } from '../intake.js';
import { AMPLITUDE_ANSWERS } from './answers.js';
import { AMPLITUDE_PATHS, AMPLITUDE_SHARED_PATH, AMPLITUDE_WIRE } from './amplitude-map.js';
import { isPlainObject } from '../../domain/items/fields/text.js';

const MISSING_KEY = 'Send your Inlet server key as "api_key" in the body (what the Amplitude SDKs do with their API key), or as "Authorization: Bearer <key>".';

function checkAmplitudePath(path: string, host: string, trackerHosts: Set<string>): Refusal | null {
  if (trackerHosts.has(host)) {
    return { code: 'not_found', message: `${host} is a tracker domain for browser traffic; send server events to the app host.` };
  }
  if (AMPLITUDE_PATHS.has(path)) return null;
  return { code: 'not_found', message: `There is no endpoint at ${echoed(path)}. The Amplitude-compatible endpoints are /2/httpapi and /2/batch.` };
}

/** Every Amplitude body is in the one shape. */
const SHAPE: WireShape = { intake: 'amplitude' };

export const AMPLITUDE_INTAKE: Intake = {
  name: 'amplitude',
  // Every path under /2/ is its own, so that an unknown one is answered in the shape the SDK reads.
  route: { methods: ['POST'], paths: ['/2/*'], owns: (url) => url.startsWith('/2/') },
  checkPath: checkAmplitudePath,
  key: { header: readBearer, inBody: { missingKey: MISSING_KEY } },
  query: null,
  anyContentType: true,
  profile: () => LIVE,
  wire: { map: AMPLITUDE_WIRE, shape: () => SHAPE },
  answers: { okStatus: 200, refuseAllInvalid: false, shape: AMPLITUDE_ANSWERS },
  // Amplitude's batch API is at /batch, which PostHog's route owns: its bodies there have "events", never "batch".
  claims: { path: AMPLITUDE_SHARED_PATH, isMine: (json) => isPlainObject(json) && Array.isArray(json.events) && !Object.hasOwn(json, 'batch') },
};
