// Where webhooks may go in production: a partner's public https endpoint, never an
// address inside walletflow's own network (loopback, RFC 1918, link-local such as the cloud
// metadata service at 169.254.169.254, CGNAT, unique-local IPv6, a compose service name), or the
// deliveries list would be a port scanner for any admin key. Checked twice: the URL at
// registration, and every address the name resolves to at delivery time, through the same lookup
// the connection then uses (a name that resolves to a public address at registration and an
// internal one later is caught, and no second lookup can change the answer in between).
import { BlockList, isIP } from 'node:net';
import dns from 'node:dns';
import type { LookupFunction } from 'node:net';

const internal = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  internal.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  // The unspecified and loopback addresses, and the IPv4-compatible form (::a.b.c.d, deprecated).
  ['::', 96],
  // IPv4-translated (::ffff:0:a.b.c.d). (IPv4-mapped ::ffff:a.b.c.d is checked as the IPv4 address
  // it names, in isInternalAddress: a rule for ::ffff:0:0/96 would block every IPv4 address.)
  ['::ffff:0:0:0', 96],
  // NAT64 (64:ff9b::/96 and the local-use 64:ff9b:1::/48), 6to4 and Teredo: they carry an IPv4
  // address a gateway on the way may turn into an internal one.
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['2002::', 16],
  ['2001::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  internal.addSubnet(network, prefix, 'ipv6');
}

/** Whether an IP address is one of walletflow's own network's (or no address to send to at all). */
export function isInternalAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return internal.check(mapped[1]!, 'ipv4');
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 4) return internal.check(address, 'ipv4');
  // ::ffff:7f00:1 and other IPv4-mapped spellings: the IPv4 address they name.
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i.exec(address);
  if (hex) {
    const high = parseInt(hex[1]!, 16);
    const low = parseInt(hex[2]!, 16);
    return internal.check(`${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`, 'ipv4');
  }
  return internal.check(address, 'ipv6');
}

/** Why a webhook URL is refused in production, or null when it may be registered. */
export function refusedWebhookUrl(url: string): string | null {
  const parsed = new URL(url);
  if (parsed.protocol !== 'https:') return 'must be an https:// URL in production';
  // A trailing dot names the same host (localhost. is localhost).
  const host = parsed.hostname.replace(/^\[|\]$/g, '').replace(/\.+$/, '');
  if (isIP(host) !== 0) return isInternalAddress(host) ? 'names an internal address' : null;
  if (
    !host.includes('.') ||
    host === 'localhost' ||
    host.endsWith('.localhost') ||
    host.endsWith('.internal') ||
    host.endsWith('.local')
  ) {
    return 'names a host inside walletflow’s own network';
  }
  return null;
}

/** The refusal a blocked connection fails with (its code is what the deliveries list shows). */
export class InternalTargetError extends Error {
  readonly code = 'INTERNAL_ADDRESS_REFUSED';
  constructor(host: string) {
    super(`${host} resolves to an internal address: refused`);
  }
}

/** A lookup for the connection itself that refuses a name with any internal address. */
export const publicOnlyLookup: LookupFunction = (hostname, options, callback) => {
  dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, '', 0);
    const list = addresses as dns.LookupAddress[];
    if (list.length === 0 || list.some((entry) => isInternalAddress(entry.address)))
      return callback(new InternalTargetError(hostname), '', 0);
    if (options.all) return (callback as unknown as (error: null, addresses: dns.LookupAddress[]) => void)(null, list);
    return callback(null, list[0]!.address, list[0]!.family);
  });
};
