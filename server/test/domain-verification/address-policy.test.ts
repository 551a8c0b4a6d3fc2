import { isPublicAddress } from '../../src/domain/sellers/domain-verification/address-policy';

describe('isPublicAddress', () => {
  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001::200e',
  ])('allows public %s', (address) => expect(isPublicAddress(address)).toBe(true));

  it.each([
    ['unspecified v4', '0.0.0.0'],
    ['this-network', '0.1.2.3'],
    ['private 10/8', '10.0.0.1'],
    ['private 172.16/12', '172.31.255.255'],
    ['private 192.168/16', '192.168.1.1'],
    ['loopback', '127.0.0.1'],
    ['loopback 127/8', '127.255.0.9'],
    ['link-local', '169.254.1.1'],
    ['cloud metadata', '169.254.169.254'],
    ['CGNAT', '100.64.0.1'],
    ['Alibaba metadata (CGNAT)', '100.100.100.200'],
    ['multicast v4', '224.0.0.1'],
    ['broadcast', '255.255.255.255'],
    ['documentation v4', '192.0.2.1'],
    ['unspecified v6', '::'],
    ['loopback v6', '::1'],
    ['unique local v6', 'fd00::1'],
    ['AWS IPv6 metadata (unique local)', 'fd00:ec2::254'],
    ['link-local v6', 'fe80::1'],
    ['link-local v6 with zone', 'fe80::1%eth0'],
    ['multicast v6', 'ff02::1'],
    ['IPv4-mapped loopback', '::ffff:127.0.0.1'],
    ['IPv4-mapped loopback, hex form', '::ffff:7f00:1'],
    ['IPv4-mapped metadata', '::ffff:169.254.169.254'],
    ['IPv4-mapped private', '::ffff:10.0.0.1'],
    ['IPv4-compatible', '::127.0.0.1'],
    ['NAT64 of loopback', '64:ff9b::7f00:1'],
    ['6to4 of private', '2002:0a00:0001::1'],
    ['Teredo', '2001:0:4136:e378::1'],
    ['documentation v6', '2001:db8::1'],
    ['not an address', 'example.com'],
  ])('refuses %s (%s)', (_what, address) => expect(isPublicAddress(address)).toBe(false));
});
