import { judgeAddress, isPublicAddress } from './outbound-address.js';

describe('outbound address rule: every special-purpose range is refused', () => {
  it.each([
    // IPv4
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['100.127.255.255', 'carrierGradeNat'],
    ['198.18.0.1', 'reserved'],
    ['198.19.255.255', 'reserved'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['198.51.100.7', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['192.88.99.1', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    // IPv6
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fd00::1', 'uniqueLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['fe80::1', 'linkLocal'],
    ['ff02::1', 'multicast'],
    ['100::1', 'discard'],
    ['2001:db8::1', 'reserved'],
    ['fec0::1', 'deprecatedSiteLocal'],
    ['2001:2::1', 'benchmarking'],
    ['2001:20::1', 'orchid2'],
    ['4000::1', 'unassigned'],
    ['5f00::1', 'segmentRouting'],
    // IPv6 embedding a non-public IPv4 address
    ['::ffff:127.0.0.1', 'ipv4Mapped:loopback'],
    ['::ffff:7f00:1', 'ipv4Mapped:loopback'],
    ['::ffff:10.0.0.1', 'ipv4Mapped:private'],
    ['::7f00:1', 'ipv4Compatible:loopback'],
    ['::127.0.0.1', 'ipv4Mapped:loopback'],
    ['::a9fe:a9fe', 'ipv4Compatible:linkLocal'],
    ['::ffff:0:7f00:1', 'rfc6145:loopback'],
    ['64:ff9b::7f00:1', 'rfc6052:loopback'],
    ['64:ff9b::10.0.0.1', 'rfc6052:private'],
    ['64:ff9b:1::c612:1', 'rfc6052:reserved'],
    ['2002:7f00:1::1', '6to4:loopback'],
    ['2002:a9fe:a9fe::1', '6to4:linkLocal'],
    ['2001:0:7f00:1::1', 'teredo:loopback'],
    ['2001:0:808:808:0:0:f5ff:fffe', 'teredo:private'],
    // not addresses
    ['not-an-ip', 'invalid'],
    ['', 'invalid'],
  ])('%s is refused (%s)', (address, range) => {
    expect(judgeAddress(address)).toEqual({ allowed: false, range });
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '100.63.255.255',
    '100.128.0.1',
    '198.17.255.255',
    '198.20.0.1',
    '172.32.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
    '2001:0:808:808::f7f7:f7f7',
  ])('%s is public', (address) => {
    expect(judgeAddress(address)).toEqual({ allowed: true });
  });
});
