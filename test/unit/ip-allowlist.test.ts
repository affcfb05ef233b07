// The session URL's sender allowlist: addresses, CIDR ranges, IPv6, and IPv4-mapped IPv6 peers.
import { describe, expect, it } from 'vitest';
import { createIpAllowlist } from '../../lib/ip-allowlist.ts';

describe('ip allowlist', () => {
  it('matches single addresses and CIDR ranges of both families', () => {
    const list = createIpAllowlist(['127.0.0.1', '10.20.0.0/16', '2001:db8::/32', '::1']);
    expect(list.allows('127.0.0.1')).toBe(true);
    expect(list.allows('127.0.0.2')).toBe(false);
    expect(list.allows('10.20.255.1')).toBe(true);
    expect(list.allows('10.21.0.1')).toBe(false);
    expect(list.allows('2001:db8:1::5')).toBe(true);
    expect(list.allows('2001:db9::5')).toBe(false);
    expect(list.allows('::1')).toBe(true);
  });

  it('reads an IPv4-mapped IPv6 peer (a dual-stack socket) as IPv4', () => {
    const list = createIpAllowlist(['127.0.0.1', '192.168.1.0/24']);
    expect(list.allows('::ffff:127.0.0.1')).toBe(true);
    expect(list.allows('::ffff:192.168.1.77')).toBe(true);
    expect(list.allows('::ffff:192.168.2.1')).toBe(false);
  });

  it('refuses everything when empty, and garbage or a missing address always', () => {
    expect(createIpAllowlist([]).allows('127.0.0.1')).toBe(false);
    const list = createIpAllowlist(['0.0.0.0/0']);
    expect(list.allows(undefined)).toBe(false);
    expect(list.allows('not-an-ip')).toBe(false);
    expect(list.allows('8.8.8.8')).toBe(true);
  });
});
