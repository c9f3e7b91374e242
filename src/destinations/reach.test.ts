import type dns from 'node:dns';
import { networkInterfaces } from 'node:os';
import { describe, expect, it } from 'vitest';
import { AddressRefused, type DestinationReach, addressRefusal, guardedLookup, hostRefusal } from './reach.js';

const CLOSED: DestinationReach = { allowPrivate: false, ownDatabaseUrl: null, selfPort: 8080 };
const OPEN: DestinationReach = { ...CLOSED, allowPrivate: true };

/** A resolver that answers from a table and never asks the network. */
const stub = (table: Record<string, string[]>) => async (host: string): Promise<dns.LookupAddress[]> => {
  const addresses = table[host];
  if (addresses === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

describe('which addresses a destination may reach', () => {
  it('destinations reach inside the network: every address but public unicast is refused, mapped and documentation ranges included', () => {
    const refused = [
      '127.0.0.1', '127.8.9.10', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0',
      '192.0.2.2', '198.51.100.7', '203.0.113.9', '198.18.0.1', '224.0.0.1', '255.255.255.255', '240.0.0.1',
      '::', '::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '::ffff:93.184.215.14', 'fe80::1', 'fc00::1', 'fd12:3456::1',
      '2001:db8::1', '64:ff9b::a00:1', '2002:a00:1::1', 'ff02::1', '::7f00:1', '::a9fe:a9fe',
    ];
    for (const a of refused) expect(addressRefusal(a, 80, CLOSED), a).not.toBeNull();
    for (const a of ['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111']) {
      expect(addressRefusal(a, 80, CLOSED), a).toBeNull();
    }
    expect(addressRefusal('::ffff:127.0.0.1', 80, CLOSED)).toBe('ipv4Mapped');
    expect(addressRefusal('169.254.169.254', 80, CLOSED)).toBe('linkLocal');
  });

  it("refuses this machine's own addresses, and with private addresses allowed, only this server's own port on them", () => {
    const mine = Object.values(networkInterfaces()).flatMap((l) => l ?? []).map((a) => a.address.split('%')[0]!);
    for (const a of mine) expect(addressRefusal(a, 9999, CLOSED), a).not.toBeNull();
    for (const a of ['127.0.0.1', '10.0.0.1', '169.254.169.254', '::ffff:127.0.0.1']) expect(addressRefusal(a, 9999, OPEN), a).toBeNull();
    for (const a of ['127.0.0.1', '::1', '0.0.0.0', '::ffff:127.0.0.1', ...mine]) expect(addressRefusal(a, 8080, OPEN), a).toBe('self');
    expect(addressRefusal('10.0.0.1', 8080, OPEN)).toBeNull();
  });

  it('judges a name by every address it resolves to, through the resolver given', async () => {
    const resolve = stub({ 'hooks.test': ['93.184.215.14'], 'mixed.test': ['93.184.215.14', '10.1.2.3'], 'inside.test': ['::ffff:127.0.0.1'] });
    expect(await hostRefusal('hooks.test', 443, { ...CLOSED, resolve })).toBeNull();
    expect(await hostRefusal('mixed.test', 443, { ...CLOSED, resolve })).toBe('refused');
    expect(await hostRefusal('inside.test', 443, { ...CLOSED, resolve })).toBe('refused');
    expect(await hostRefusal('inside.test', 443, { ...OPEN, resolve })).toBeNull();
    expect(await hostRefusal('nowhere.test', 443, { ...CLOSED, resolve })).toBe('unresolved');
    expect(await hostRefusal('[::ffff:7f00:1]', 443, { ...CLOSED, resolve })).toBe('refused');
  });

  it('the lookup a socket is given refuses a name that resolves to a private address, and answers as dns.lookup otherwise', async () => {
    const resolve = stub({ 'inside.test': ['10.0.0.7'], 'hooks.test': ['93.184.215.14', '2606:4700:4700::1111'] });
    const lookup = guardedLookup({ ...CLOSED, resolve }, 443);
    const ask = (host: string, options: dns.LookupOptions) =>
      new Promise<{ err: Error | null; address: unknown; family?: number }>((done) => lookup(host, options, (err, address, family) => done({ err, address, family })));
    const refused = await ask('inside.test', {});
    expect(refused.err).toBeInstanceOf(AddressRefused);
    expect(refused.err!.message).toMatch(/^Refused: inside\.test is, or resolves to, an address destinations may not reach/);
    expect(refused.err!.message).not.toContain('10.0.0.7');
    expect(await ask('hooks.test', {})).toEqual({ err: null, address: '93.184.215.14', family: 4 });
    expect(await ask('hooks.test', { family: 6 })).toEqual({ err: null, address: '2606:4700:4700::1111', family: 6 });
    expect((await ask('hooks.test', { all: true })).address).toHaveLength(2);
    expect((await ask('nowhere.test', {})).err).toMatchObject({ code: 'ENOTFOUND' });
  });
});
