import { describe, expect, it } from 'vitest';
import { commandName } from './command-name.js';
import { firstSteps, shellWord } from './first-steps.js';

const facts = { dataDir: './data', databaseUrl: null, hasProject: false, hasUser: false, command: './bin/inlet', cwd: '/home/me/inlet' };

describe('firstSteps', () => {
  it('on the default data directory, gives the commands without --data-dir', () => {
    const lines = firstSteps(facts).trimEnd().split('\n');
    expect(lines).toHaveLength(5);
    expect(lines[1]).toBe('  ./bin/inlet project create --name "My app" --api-enabled');
    expect(lines.join('\n')).not.toContain('--data-dir');
    expect(firstSteps({ ...facts, dataDir: '/home/me/inlet/data/' })).not.toContain('--data-dir');
  });

  it('elsewhere, fills in the absolute data directory, quoted for the shell when it must be', () => {
    expect(firstSteps({ ...facts, dataDir: 'store' })).toContain('project create --name "My app" --api-enabled --data-dir /home/me/inlet/store\n');
    expect(firstSteps({ ...facts, dataDir: "/srv/it's here" })).toContain(`--data-dir '/srv/it'\\''s here'`);
  });

  it('on PostgreSQL, names the setting to share instead of a directory', () => {
    const out = firstSteps({ ...facts, dataDir: '/elsewhere', databaseUrl: 'postgres://db/inlet' });
    expect(out.split('\n')[0]).toBe('next, in another terminal from this directory, with the same INLET_DATABASE_URL:');
    expect(out).not.toContain('--data-dir');
  });

  it('leaves out the account once there is one, and says nothing once there is a project', () => {
    expect(firstSteps({ ...facts, hasUser: true })).not.toContain('user create');
    expect(firstSteps({ ...facts, hasProject: true })).toBe('');
  });
});

describe('commandName', () => {
  it('is ./bin/inlet from the repository, and inlet from anywhere else or for another script', () => {
    expect(commandName('/home/me/inlet/bin/inlet', '/home/me/inlet')).toBe('./bin/inlet');
    expect(commandName('/home/me/inlet/bin/inlet', '/tmp')).toBe('inlet');
    expect(commandName('/home/me/inlet/node_modules/vitest/vitest.mjs', '/home/me/inlet')).toBe('inlet');
    expect(commandName(undefined, '/')).toBe('inlet');
  });
});

describe('shellWord', () => {
  it('quotes only what the shell would read otherwise', () => {
    expect(shellWord('/var/lib/inlet')).toBe('/var/lib/inlet');
    expect(shellWord('/a b')).toBe("'/a b'");
    expect(shellWord('$HOME')).toBe("'$HOME'");
  });
});
