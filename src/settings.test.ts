import { describe, expect, it } from 'vitest';
import { ConfigError, SETTINGS, readSettings, settingName } from './settings.js';

/** A value each setting must refuse. A setting added without one here fails the first test. */
const REFUSED: Record<keyof typeof SETTINGS, string> = {
  port: '65536',
  host: 'not a host!',
  dataDir: '', // every path is a directory name; checked by the start itself (see below)
  baseUrl: 'inlet.example.com',
  databaseUrl: 'mysql://db/inlet',
  redisUrl: 'notaurl',
  redisTimeoutMs: '0',
  trackerHosts: 'https://t.example.com',
  trustedProxies: '10.0.0.0/33',
  retiredVersions: 'v1beta',
  limitBurst: '-5',
  limitSustained: '1e6',
  limitKeyRps: 'ten',
  limitImport: 'lots',
  bodyBudgetBytes: '2MB',
  bodyWaitMs: '30000',
  logLevel: 'verbose',
  metricsPort: '99999',
  metricsHost: 'http://0.0.0.0',
  stopDrainMs: '60001',
  destinationLeaseMs: '299',
  destinationsAllowPrivate: 'yes',
  readingBudgetBytes: '1000',
  readingKeyBudgetBytes: 'lots',
  readingKeylessBudgetBytes: '1048575',
  readingAddressBudgetBytes: '1MiB',
  maxConnections: '1e4',
  liveStreams: '0',
  liveStreamsPerSession: '10001',
  checkThreads: '65',
};

describe('settings', () => {
  it('every setting has a refused value in this test, a default, what it accepts and a sentence', () => {
    expect(Object.keys(REFUSED).sort()).toEqual(Object.keys(SETTINGS).sort());
    for (const s of Object.values(SETTINGS)) {
      expect(s.env).toMatch(/^INLET_[A-Z_]+$/);
      expect(s.shown).not.toBe('');
      expect(s.accepts).not.toBe('');
      expect(s.about).toMatch(/^[A-Z].*\.$/);
    }
  });

  it.each(Object.entries(REFUSED).filter(([, bad]) => bad !== ''))('%s: a bad value is refused with the setting named and the values it accepts', (key, bad) => {
    const s = SETTINGS[key as keyof typeof SETTINGS];
    const attempt = () => readSettings({ [s.env]: bad });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(`${settingName(s)} must be ${s.accepts}, not `);
    // Secrets (URLs that may hold a password) are never repeated back.
    if (s.secret) expect(attempt).not.toThrow(bad);
    else expect(attempt).toThrow(`"${bad}"`);
  });

  it('a flag wins over its variable, an empty variable is unset, and the defaults are those documented', () => {
    expect(readSettings({ INLET_PORT: '9000' }, { port: '9001' }).port).toBe(9001);
    expect(readSettings({ INLET_PORT: '  ' }).port).toBe(8080);
    const d = readSettings({});
    expect(d).toMatchObject({ port: 8080, host: '127.0.0.1', dataDir: './data', baseUrl: null, metricsPort: 9464, metricsHost: '127.0.0.1', logLevel: 'info', stopDrainMs: 0, redisTimeoutMs: 300 });
    expect(readSettings({ INLET_METRICS_PORT: '0' }).metricsPort).toBe(0);
    expect(readSettings({ INLET_REDIS_URL: 'rediss://:pw@cache.internal:6380/2' }).redisUrl).toBe('rediss://:pw@cache.internal:6380/2');
    expect(readSettings({ INLET_BASE_URL: 'https://inlet.example.com/' }).baseUrl).toBe('https://inlet.example.com');
    expect([...readSettings({ INLET_TRACKER_HOSTS: 'T.example.com, t2.example.com' }).trackerHosts]).toEqual(['t.example.com', 't2.example.com']);
    expect([...readSettings({ INLET_RETIRED_API_VERSIONS: 'v0,2' }).retiredVersions]).toEqual(['0', '2']);
    expect([...readSettings({ INLET_TRUSTED_PROXIES: '127.0.0.1, 10.0.0.0/8,fd00::/8' }).trustedProxies]).toEqual(['127.0.0.1', '10.0.0.0/8', 'fd00::/8']);
    for (const bad of ['10.0.0.0/', '10.0.0.0/8/8', 'nginx', '::1/129']) expect(() => readSettings({ INLET_TRUSTED_PROXIES: bad })).toThrow(ConfigError);
  });

  it('a URL that may hold a password is never repeated in a refusal', () => {
    expect(() => readSettings({ INLET_DATABASE_URL: 'mysql://u:s3cret@db/inlet' })).toThrow(
      new ConfigError('INLET_DATABASE_URL must be a postgres:// or postgresql:// URL, or unset for the embedded store, not the value given.'),
    );
  });
});

