/**
 * The Mixpanel-compatible endpoints (/track, /engage, /groups, /import), so
 * code written for the `mixpanel` SDKs works by changing its host: the events
 * as `data=<base64 JSON>` in a GET's query or a POST's form (or a JSON array
 * on /import), the key where Mixpanel's libraries put the project token
 * (`properties.token`, `$token`) or as the HTTP Basic user, and answers as
 * those SDKs read them (answers.ts).
 */
import { echoed } from '../../domain/echo.js';
import type { WireShape } from '../../pipeline/foreign-body.js';
import type { Refusal } from '../../domain/intake/refusal.js';
import { ENDPOINTS, IMPORT_PATH, LIVE } from '../batch/endpoints.js';
import type { Intake } from '../intake.js';
import { readSegmentKey } from '../segment/intake.js';
import { MIXPANEL_ANSWERS } from './answers.js';
import { MIXPANEL_PATHS, MIXPANEL_WIRE } from './mixpanel-map.js';

const MISSING_KEY =
  'Send your Inlet server key as the project token (properties.token of each event, $token of a people or group update: what the Mixpanel SDKs do with the token they are given), or as the HTTP Basic user name.';

function checkMixpanelPath(path: string, host: string, trackerHosts: Set<string>): Refusal | null {
  if (trackerHosts.has(host)) {
    return { code: 'not_found', message: `${host} is a tracker domain for browser traffic; send server events to the app host.` };
  }
  if (MIXPANEL_PATHS.has(path)) return null;
  return { code: 'not_found', message: `There is no endpoint at ${echoed(path)}. The Mixpanel-compatible endpoints are /track, /engage, /groups and /import.` };
}

/** Each path's shape, made once: its kind names what its messages are. */
const SHAPES: ReadonlyMap<string, WireShape> = new Map([...MIXPANEL_PATHS].map(([path, type]) => [path, { intake: 'mixpanel', type }]));

/** The path alone of a request's target. */
function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

export const MIXPANEL_INTAKE: Intake = {
  name: 'mixpanel',
  route: { methods: ['GET', 'POST'], paths: [...MIXPANEL_PATHS.keys()], owns: (url) => MIXPANEL_PATHS.has(pathOf(url)) },
  // The SDKs send one message a request as a GET.
  queryAsBody: true,
  checkPath: checkMixpanelPath,
  // /import's key may be the Basic user; every message also carries the token.
  key: { header: readSegmentKey, inBody: { missingKey: MISSING_KEY } },
  // Its parameters (data, verbose, ip, api_key, test) are read where they matter: data with the body, verbose by the answer.
  query: null,
  // A form, or JSON on /import: the body's own check decides.
  anyContentType: true,
  profile: (path) => (MIXPANEL_PATHS.get(path) === 'import' ? ENDPOINTS.get(IMPORT_PATH)! : LIVE),
  // The path check passed, so the path is one of MIXPANEL_PATHS.
  wire: { map: MIXPANEL_WIRE, shape: (path) => SHAPES.get(path)! },
  answers: { okStatus: 200, refuseAllInvalid: false, shape: MIXPANEL_ANSWERS },
};
