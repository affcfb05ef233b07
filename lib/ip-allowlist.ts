// An allowlist of IPv4/IPv6 addresses and CIDR ranges (SESSION_ALLOWED_IPS). An IPv4-mapped IPv6
// address (::ffff:10.0.0.1, as a dual-stack socket reports an IPv4 peer) is matched as IPv4.
import { BlockList, isIP } from 'node:net';

export interface IpAllowlist {
  allows(address: string | undefined): boolean;
}

const mappedIpv4 = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;

export function createIpAllowlist(entries: readonly string[]): IpAllowlist {
  const list = new BlockList();
  for (const entry of entries) {
    const [address = '', prefix] = entry.split('/');
    const family = isIP(address);
    if (family === 0) throw new RangeError(`not an IP address or CIDR range: ${entry}`);
    const type = family === 4 ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(address, type);
    else list.addSubnet(address, Number(prefix), type);
  }
  return {
    allows(address) {
      if (!address) return false;
      const mapped = mappedIpv4.exec(address)?.[1];
      if (mapped && isIP(mapped) === 4 && list.check(mapped, 'ipv4')) return true;
      const family = isIP(address);
      if (family === 0) return false;
      return list.check(address, family === 4 ? 'ipv4' : 'ipv6');
    },
  };
}
