import net from 'node:net';

/**
 * Which IP addresses the safe fetcher may connect to: public unicast only.
 *
 * IPv4: everything except the special-purpose ranges below (private, loopback, link-local incl. the cloud metadata
 * address 169.254.169.254, CGNAT incl. 100.100.100.200, multicast, reserved, documentation, benchmarking, 0/8).
 * IPv6: only global unicast 2000::/3, minus Teredo, 6to4, documentation and ORCHID. Everything else is refused,
 * including ::, ::1, fc00::/7 (unique local, e.g. fd00:ec2::254), fe80::/10, ff00::/8, NAT64 64:ff9b::/96 and all
 * IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible addresses, whatever IPv4 address they embed.
 */
const deniedV4 = new net.BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network", unspecified
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // TEST-NET-1
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // TEST-NET-2
  ['203.0.113.0', 24], // TEST-NET-3
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  deniedV4.addSubnet(network, prefix, 'ipv4');
}

const globalV6 = new net.BlockList();
globalV6.addSubnet('2000::', 3, 'ipv6');

const deniedV6 = new net.BlockList();
for (const [network, prefix] of [
  ['2001::', 32], // Teredo
  ['2001:2::', 48], // benchmarking
  ['2001:10::', 28], // ORCHID
  ['2001:20::', 28], // ORCHIDv2
  ['2001:db8::', 32], // documentation
  ['2002::', 16], // 6to4 (embeds an IPv4 address)
  ['3fff::', 20], // documentation (RFC 9637)
] as const) {
  deniedV6.addSubnet(network, prefix, 'ipv6');
}

/** True only for a syntactically valid IP address that is public unicast. Anything unparseable is not public. */
export function isPublicAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return !deniedV4.check(address, 'ipv4');
  if (family === 6) {
    // Zone ids (fe80::1%eth0) only occur on link-local addresses.
    if (address.includes('%')) return false;
    return globalV6.check(address, 'ipv6') && !deniedV6.check(address, 'ipv6');
  }
  return false;
}
