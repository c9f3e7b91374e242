import type { Config } from '../config.js';
import { ConfigError, SETTINGS, type SettingSpec, settingName } from '../settings.js';
import { nextFreePort, probePort } from './port-probe.js';

interface Wanted {
  what: string;
  port: number;
  host: string;
  portSetting: SettingSpec<unknown>;
  hostSetting: SettingSpec<unknown>;
}

const WILDCARDS = new Set(['0.0.0.0', '::', '']);

/** The ports `inlet serve` binds with these settings: the API's, and the metrics listener's unless it is off. 0 needs no check. */
function wantedPorts(cfg: Config): Wanted[] {
  const all: Wanted[] = [{ what: 'the API', port: cfg.port, host: cfg.host, portSetting: SETTINGS.port, hostSetting: SETTINGS.host }];
  if (cfg.metricsPort !== 0) {
    all.push({ what: 'metrics', port: cfg.metricsPort, host: cfg.metricsHost, portSetting: SETTINGS.metricsPort, hostSetting: SETTINGS.metricsHost });
  }
  return all.filter((w) => w.port !== 0);
}

/**
 * Checks every port the server will bind before it binds any, and refuses with one sentence that
 * names all those in use: a newcomer whose 9464 and 8080 are both taken learns it in one start,
 * not one port per restart. Throws ConfigError; a port taken between this check and the bind is
 * still reported by the bind itself.
 */
export async function ensurePortsFree(cfg: Config): Promise<void> {
  const wanted = wantedPorts(cfg);
  const [a, b] = wanted;
  if (a !== undefined && b !== undefined && a.port === b.port && (a.host === b.host || WILDCARDS.has(a.host) || WILDCARDS.has(b.host))) {
    throw new ConfigError(`${settingName(a.portSetting)} and ${settingName(b.portSetting)} are both ${a.port}; give the metrics listener a port of its own.`);
  }
  const refused: (Wanted & { code: string; error: Error })[] = [];
  for (const w of wanted) {
    const why = await probePort(w.port, w.host);
    if (why !== null) refused.push({ ...w, ...why });
  }
  // A host that is not this machine's, or a port that needs privileges, is no clash: say that first.
  const other = refused.find((r) => r.code !== 'EADDRINUSE');
  if (other !== undefined) throw bindFailure(other.code, other.error, other);
  if (refused.length === 0) return;
  const avoid = new Set(wanted.map((w) => w.port));
  const suggestions: string[] = [];
  for (const r of refused) {
    const free = await nextFreePort(r.port, r.host, avoid);
    if (free === null) continue;
    avoid.add(free);
    suggestions.push(`${r.portSetting.flag!.split(' ')[0]} ${free}`);
  }
  const instead = suggestions.length === refused.length ? `, e.g. ${suggestions.join(' ')} (${suggestions.length === 1 ? 'free' : 'all free'} now)` : '';
  const [one] = refused;
  if (refused.length === 1 && one !== undefined) {
    throw new ConfigError(`Port ${one.port} on ${one.host} is already in use by another process (${settingName(one.portSetting)}); stop that process, or choose another port${instead}.`);
  }
  const named = refused.map((r) => `${r.port} on ${r.host} (${settingName(r.portSetting)})`);
  throw new ConfigError(`Ports are already in use by other processes: ${named.slice(0, -1).join(', ')} and ${named.at(-1)}; stop those processes, or choose other ports${instead}.`);
}

/** A bind that failed for a reason other than a port in use, as a sentence that names the setting to change. */
export function bindFailure(code: string | undefined, e: Error, w: { port: number; host: string; portSetting: SettingSpec<unknown>; hostSetting: SettingSpec<unknown> }): Error {
  const { port, host, portSetting, hostSetting } = w;
  if (code === 'EADDRINUSE') {
    return new ConfigError(`Port ${port} on ${host} is already in use by another process; stop that process, or choose another port with ${settingName(portSetting)}.`);
  }
  if (code === 'EACCES') {
    return new ConfigError(`Port ${port} needs privileges this process lacks; choose a port from 1024 up with ${settingName(portSetting)} (and put a proxy such as nginx in front).`);
  }
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new ConfigError(`Cannot listen on ${host}: it is not an address of this machine; choose another with ${settingName(hostSetting)}.`);
  }
  return new ConfigError(`Cannot listen on ${host} port ${port} (${e.message}); check ${settingName(hostSetting)} and ${settingName(portSetting)}.`);
}

/** A host as a URL spells it: an IPv6 address in brackets. */
export function bracketed(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
