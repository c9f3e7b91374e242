/**
 * Which addresses a destination may reach (docs/destinations.md, "Addresses
 * destinations may not reach"). A destination's URL is typed by any console
 * member, and the server connects to it from inside its network: without a
 * guard it reaches cloud metadata (169.254.169.254), private services and the
 * server's own ports. So only public unicast addresses are reached, unless
 * the operator sets INLET_DESTINATIONS_ALLOW_PRIVATE=true. The check is made
 * on the addresses a name resolves to at the moment of connecting (a lookup
 * given to the socket), so a name that resolved to a public address when the
 * destination was made and to a private one now (DNS rebinding) is refused.
 */
import dns from 'node:dns';
import net from 'node:net';
import { networkInterfaces } from 'node:os';
import ipaddr from 'ipaddr.js';
import type { DestinationReach } from '../stores/port-destinations.js';

export type { DestinationReach };

/** Resolves a host name to every address it has, as dns.lookup with `all` does. */
export type Resolve = (host: string) => Promise<dns.LookupAddress[]>;

const systemResolve: Resolve = (host) => dns.promises.lookup(host, { all: true, verbatim: true });

/** The error of a connection the guard refused: its message is the one `last_error` shows. */
export class AddressRefused extends Error {
  readonly code = 'EINLETREFUSED';
  constructor(host: string) {
    super(refusedMessage(host));
  }
}

/** Why a destination's host is refused, without the address it resolved to (that would map the inside of the network). */
export function refusedMessage(host: string): string {
  return (
    `Refused: ${host} is, or resolves to, an address destinations may not reach (loopback, private, link-local, reserved, or this server's own); ` +
    'an operator can allow them by starting the servers (inlet serve) with INLET_DESTINATIONS_ALLOW_PRIVATE=true, and making the destination with it set too.'
  );
}

/**
 * How long the addresses of this machine's interfaces are kept once read:
 * reading them (getifaddrs) took 36 µs, 60 with the check, and a webhook to
 * an IP literal is checked before every batch it sends. An address added to
 * an interface is refused at most this much later.
 */
export const OWN_ADDRESSES_MS = 1000;
let own: { readAt: number; addresses: Set<string> } | null = null;

/** The addresses of this machine's interfaces, each as ipaddr.js writes it, read again once OWN_ADDRESSES_MS old. */
export function ownAddresses(now = Date.now()): Set<string> {
  if (own !== null && now >= own.readAt && now - own.readAt < OWN_ADDRESSES_MS) return own.addresses;
  own = { readAt: now, addresses: readOwnAddresses() };
  return own.addresses;
}

function readOwnAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      const bare = a.address.split('%')[0]!;
      if (ipaddr.isValid(bare)) out.add(ipaddr.process(bare).toNormalizedString());
    }
  }
  return out;
}

/**
 * Why `address` (an IP literal) may not be reached on `port`: the ipaddr.js
 * range it lies in ('loopback', 'private', 'linkLocal', 'ipv4Mapped',
 * 'reserved', …: anything but public unicast), 'own' for an address of
 * this machine, 'self' for this server's own port on a local address (refused
 * even when private addresses are allowed); null when it may be reached.
 */
export function addressRefusal(address: string, port: number, reach: Pick<DestinationReach, 'allowPrivate' | 'selfPort'>): string | null {
  const bare = address.replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(bare)) return 'invalid';
  const parsed = ipaddr.parse(bare);
  // A mapped IPv4 address reaches the IPv4 one: it is judged as that one too.
  const plain = ipaddr.process(bare);
  const own = ownAddresses().has(plain.toNormalizedString());
  const local = own || ['loopback', 'unspecified'].includes(plain.range());
  if (local && reach.selfPort !== null && port === reach.selfPort) return 'self';
  if (reach.allowPrivate) return null;
  if (parsed.range() !== 'unicast') return parsed.range();
  // ::a.b.c.d (IPv4-compatible, deprecated): ipaddr.js calls it unicast, but a
  // host with a tunnel or translator may carry it to the IPv4 address inside.
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).parts.slice(0, 6).every((p) => p === 0)) return 'ipv4Compatible';
  if (plain.range() !== 'unicast') return plain.range();
  return own ? 'own' : null;
}

/** A host as a URL spells it, IPv6 without its brackets. */
export const bareHost = (host: string): string => host.replace(/^\[|\]$/g, '');

/**
 * Whether a destination's host may be reached on `port`: 'refused' when the
 * host is, or any address it resolves to is, one that may not be;
 * 'unresolved' when it does not resolve now; null when it may be reached.
 */
export async function hostRefusal(host: string, port: number, reach: DestinationReach): Promise<'refused' | 'unresolved' | null> {
  const h = bareHost(host);
  if (net.isIP(h) !== 0) return addressRefusal(h, port, reach) === null ? null : 'refused';
  let addresses: dns.LookupAddress[];
  try {
    addresses = await (reach.resolve ?? systemResolve)(h);
  } catch {
    return 'unresolved';
  }
  if (addresses.length === 0) return 'unresolved';
  return addresses.some((a) => addressRefusal(a.address, port, reach) !== null) ? 'refused' : null;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

/**
 * A `lookup` for a socket to `port`: resolves the name, and refuses the
 * connection (AddressRefused) when any of its addresses may not be reached.
 * Node calls it for host names only; an IP literal is checked by `checkedConnect`.
 */
export function guardedLookup(reach: DestinationReach, port: number): net.LookupFunction {
  return (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => {
    (reach.resolve ?? systemResolve)(hostname).then(
      (all) => {
        if (all.some((a) => addressRefusal(a.address, port, reach) !== null)) return callback(new AddressRefused(hostname), '', 0);
        const wanted = options.family === 4 || options.family === 6 ? all.filter((a) => a.family === options.family) : all;
        if (wanted.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
        if (options.all === true) callback(null, wanted);
        else callback(null, wanted[0]!.address, wanted[0]!.family);
      },
      (e: NodeJS.ErrnoException) => callback(e, '', 0),
    );
  };
}

/** An error to end a connection to an IP literal that may not be reached, or null: Node skips the lookup for literals. */
export function literalRefusal(host: string, port: number, reach: DestinationReach): AddressRefused | null {
  const h = bareHost(host);
  return net.isIP(h) !== 0 && addressRefusal(h, port, reach) !== null ? new AddressRefused(host) : null;
}

/**
 * A socket whose `connect(port, host)` goes through the guard: for pg's
 * `stream` option, so that the PostgreSQL driver resolves and connects as
 * Node does, on an address the guard let through.
 */
export function guardedSocket(reach: DestinationReach): net.Socket {
  const socket = new net.Socket();
  const connect = socket.connect.bind(socket) as (o: net.TcpSocketConnectOpts) => net.Socket;
  const guarded = (port: number, host: string): net.Socket => {
    const refused = literalRefusal(host, port, reach);
    // After the caller has its error listener on: connect is called before it.
    if (refused !== null) process.nextTick(() => socket.destroy(refused));
    else connect({ port, host: bareHost(host), lookup: guardedLookup(reach, port) });
    return socket;
  };
  Object.defineProperty(socket, 'connect', { value: guarded });
  return socket;
}
