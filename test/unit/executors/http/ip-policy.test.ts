import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { classifyAddress, egressVerdict } from '../../../../src/executors/http/index.js';
import { parseIPv6, sameAddress } from '../../../../src/executors/http/ip-policy.js';

describe('egress policy: address classes', () => {
  const rows: [string, string][] = [
    ['8.8.8.8', 'public'],
    ['93.184.216.34', 'public'],
    ['2606:4700:4700::1111', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', 'public'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'shared'],
    ['100.127.255.255', 'shared'],
    ['169.254.169.254', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.1', 'documentation'],
    ['198.18.0.1', 'reserved'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:8.8.8.8', 'public'],
    ['::ffff:0:127.0.0.1', 'loopback'],
    ['::127.0.0.1', 'ipv4-compatible'],
    ['::7f00:1', 'ipv4-compatible'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['64:ff9b::8.8.8.8', 'public'],
    ['64:ff9b:1::1', 'nat64-local'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:c0a8:101::1', 'private'],
    ['2002:808:808::1', 'public'],
    ['2001:0:4136:e378::1', 'teredo'],
    ['2001:db8::1', 'documentation'],
    ['fc00::1', 'unique-local'],
    ['fd12:3456::1', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['100::1', 'reserved'],
    ['4000::1', 'reserved'],
    ['not-an-ip', 'invalid'],
    ['2130706433', 'invalid'],
    ['127.1', 'invalid'],
  ];
  for (const [address, expected] of rows) {
    it(`${address} → ${expected}`, () => {
      const c = classifyAddress(address);
      assert.equal(c.kind === 'public' ? 'public' : c.reason, expected);
    });
  }
});

describe('egress policy: allowPrivate', () => {
  const rows: [string, boolean, boolean][] = [
    ['127.0.0.1', false, false],
    ['127.0.0.1', true, true],
    ['10.0.0.1', true, true],
    ['169.254.169.254', true, true],
    ['::1', true, true],
    ['0.0.0.0', true, false],
    ['::', true, false],
    ['224.0.0.1', true, false],
    ['255.255.255.255', true, false],
    ['garbage', true, false],
    ['8.8.8.8', false, true],
  ];
  for (const [address, allowPrivate, allowed] of rows) {
    it(`${address} with allowPrivate=${allowPrivate} → ${allowed ? 'allowed' : 'refused'}`, () => {
      assert.equal(egressVerdict(address, allowPrivate).allowed, allowed);
    });
  }
});

describe('IPv6 parsing', () => {
  it('expands every textual form to the same 16 bytes', () => {
    const want = Buffer.from('00000000000000000000ffff7f000001', 'hex');
    for (const a of ['::ffff:127.0.0.1', '::ffff:7f00:1', '0:0:0:0:0:ffff:7f00:1', '::FFFF:7F00:0001']) {
      assert.deepEqual(Buffer.from(parseIPv6(a) ?? []), want, a);
    }
    assert.equal(parseIPv6('1:2:3'), null);
    assert.equal(parseIPv6('127.0.0.1'), null);
  });

  it('compares addresses by value', () => {
    assert.ok(sameAddress('::1', '0:0::1'));
    assert.ok(sameAddress('127.0.0.1', '127.0.0.1'));
    assert.ok(!sameAddress('127.0.0.1', '127.0.0.2'));
    assert.ok(!sameAddress('::1', '::2'));
  });
});
