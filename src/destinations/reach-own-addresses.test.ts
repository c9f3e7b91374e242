import type os from 'node:os';
import { beforeEach, describe, expect, it, vi } from 'vitest';

/** The interfaces the mocked node:os reports, and how often it was asked. */
const machine = vi.hoisted(() => ({ addresses: ['127.0.0.1'], reads: 0 }));

vi.mock('node:os', async (original) => {
  const real = await original<typeof os>();
  const networkInterfaces = () => {
    machine.reads++;
    return { eth0: machine.addresses.map((address) => ({ address, netmask: '255.255.255.0', family: 'IPv4', mac: '00:00:00:00:00:00', internal: false, cidr: null })) };
  };
  return { ...real, default: { ...real, networkInterfaces }, networkInterfaces };
});

const { OWN_ADDRESSES_MS, addressRefusal, ownAddresses } = await import('./reach.js');

describe("this machine's own addresses", () => {
  beforeEach(() => {
    machine.addresses = ['127.0.0.1'];
    machine.reads = 0;
  });

  it('are read once per OWN_ADDRESSES_MS, and an address added to an interface is refused once they are read again', () => {
    const t = 5_000_000_000;
    ownAddresses(t);
    const reads = machine.reads;
    machine.addresses = ['127.0.0.1', '93.184.215.14'];
    expect(ownAddresses(t + OWN_ADDRESSES_MS - 1).has('93.184.215.14')).toBe(false);
    expect(machine.reads).toBe(reads);
    expect(ownAddresses(t + OWN_ADDRESSES_MS).has('93.184.215.14')).toBe(true);
    expect(machine.reads).toBe(reads + 1);
    // A clock set back reads them again rather than keeping them past their time.
    expect(ownAddresses(t).has('93.184.215.14')).toBe(true);
    expect(machine.reads).toBe(reads + 2);
  });

  it('a public address of this machine is refused as its own, from addresses read afresh long after the last read', () => {
    // An address no earlier read saw, checked long past the first test's times.
    machine.addresses = ['93.184.215.20'];
    vi.useFakeTimers({ now: 6_000_000_000 });
    try {
      expect(addressRefusal('93.184.215.20', 443, { allowPrivate: false, selfPort: null })).toBe('own');
      expect(addressRefusal('93.184.215.14', 443, { allowPrivate: false, selfPort: null })).toBeNull();
    } finally {
      vi.useRealTimers();
    }
  });
});
