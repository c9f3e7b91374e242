/**
 * Fault 19: `npm install` warned EBADENGINE on Node 20 (cookie@2, through
 * light-my-request, wants Node 22). npm warns when an installed package's
 * engines.node does not admit the running Node, so every installed package
 * must admit every Node that package.json says Inlet runs on, Node 20 included.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
};

/** Lockfile entries installed on this machine (platform-specific optional ones for other systems are not). */
const installed = Object.entries(lock.packages).filter(([path]) => path !== '' && existsSync(join(ROOT, path)));

describe('fault 19: a clean install prints no engine warning on Node 20', () => {
  it('package.json states a Node 20 floor', () => {
    expect(semver.minVersion(pkg.engines.node)?.major).toBe(20);
  });

  it('every installed package admits every Node 20 that package.json admits', () => {
    const node20 = semver.intersects(pkg.engines.node, '^20') ? `${pkg.engines.node} <21` : '^20';
    const refused = installed.flatMap(([path, entry]) => {
      const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
      return range === undefined || semver.subset(node20, range) ? [] : [`${path}@${entry.version}: engines.node ${range}`];
    });
    expect(installed.length).toBeGreaterThan(50);
    expect(refused).toEqual([]);
  });

  it('light-my-request (fastify inject) uses a cookie that admits Node 20', () => {
    const cookie = lock.packages['node_modules/cookie'] ?? lock.packages['node_modules/light-my-request/node_modules/cookie'];
    expect(cookie?.version).toMatch(/^1\./);
  });
});
