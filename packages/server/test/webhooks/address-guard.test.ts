import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyAddress } from '../../src/domains/webhooks/address-guard.js';

describe('webhook address classes', () => {
  const cases: [string, string | null][] = [
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', null],
    ['192.168.0.1', 'private'],
    ['169.254.0.1', 'link_local'],
    ['169.254.169.254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['100.64.0.1', 'shared'],
    ['100.127.255.255', 'shared'],
    ['100.128.0.1', null],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.251', 'multicast'],
    ['255.255.255.255', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['8.8.8.8', null],
    ['93.184.215.14', null],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::127.0.0.1', 'loopback'],
    ['64:ff9b::a00:1', 'private'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:808:808::1', null],
    ['fc00::1', 'private'],
    ['fd00:ec2::254', 'metadata'],
    ['fe80::1%eth0', 'link_local'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['2001::1', 'reserved'],
    ['2606:4700:4700::1111', null],
    ['::ffff:8.8.8.8', null],
  ];
  for (const [address, expected] of cases) {
    it(`${address} → ${expected ?? 'public'}`, () => {
      assert.equal(classifyAddress(address), expected);
    });
  }
});
