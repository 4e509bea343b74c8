/**
 * Egress policy for IP addresses: which addresses an HTTP call may connect
 * to. Every decision is made on a concrete address (a resolver's answer or a
 * socket's remote address), never on a URL string, so encodings of the host
 * (decimal, hex, octal, short IPv4, IPv4-mapped IPv6, NAT64, 6to4) cannot
 * slip past: IPv6 forms that embed an IPv4 address are judged by that
 * address.
 *
 * Invariants:
 * - Pure; fail closed: anything that does not parse as an IP is refused.
 * - IPv6 outside 2000::/3 is refused unless it is a known embedding of IPv4.
 * - `allowPrivate` (an explicitly local target) opens loopback, private,
 *   link-local and reserved ranges, but never the unspecified address,
 *   multicast or broadcast, which are never a real server.
 */
import { isIPv4, isIPv6 } from 'node:net';

export type BlockReason =
  | 'invalid'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'shared'
  | 'link-local'
  | 'unique-local'
  | 'site-local'
  | 'multicast'
  | 'broadcast'
  | 'documentation'
  | 'reserved'
  | 'ipv4-compatible'
  | 'teredo'
  | 'nat64-local';

export type AddressClass = { readonly kind: 'public' } | { readonly kind: 'special'; readonly reason: BlockReason };

export type EgressVerdict =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly reason: BlockReason };

/** Reasons that even an explicitly local target may not use. */
const NEVER_ALLOWED: ReadonlySet<BlockReason> = new Set(['invalid', 'unspecified', 'multicast', 'broadcast']);

export function egressVerdict(address: string, allowPrivate: boolean): EgressVerdict {
  const c = classifyAddress(address);
  if (c.kind === 'public') return { allowed: true };
  if (allowPrivate && !NEVER_ALLOWED.has(c.reason)) return { allowed: true };
  return { allowed: false, reason: c.reason };
}

/** [network, prefix length, reason], most specific first where ranges nest. */
const IPV4_RANGES: readonly (readonly [string, number, BlockReason])[] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'shared'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['255.255.255.255', 32, 'broadcast'],
  ['240.0.0.0', 4, 'reserved'],
];

export function classifyAddress(address: string): AddressClass {
  if (isIPv4(address)) return classifyIPv4(ipv4ToNumber(address));
  const bytes = parseIPv6(address);
  return bytes === null ? { kind: 'special', reason: 'invalid' } : classifyIPv6(bytes);
}

/** IPV4_RANGES as [network, mask] numbers, worked out once. */
const IPV4_MASKED: readonly (readonly [number, number, BlockReason])[] = IPV4_RANGES.map(([net, bits, reason]) => [
  ipv4ToNumber(net),
  bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0,
  reason,
]);

function classifyIPv4(n: number): AddressClass {
  for (const [net, mask, reason] of IPV4_MASKED) {
    if (((n & mask) >>> 0) === net) return { kind: 'special', reason };
  }
  return { kind: 'public' };
}

function classifyIPv6(b: Uint8Array): AddressClass {
  const word = (i: number): number => ((b[2 * i] ?? 0) << 8) | (b[2 * i + 1] ?? 0);
  const v4At = (i: number): number => (((b[i] ?? 0) << 24) | ((b[i + 1] ?? 0) << 16) | ((b[i + 2] ?? 0) << 8) | (b[i + 3] ?? 0)) >>> 0;
  const zeroUpTo = (n: number): boolean => b.subarray(0, n).every((x) => x === 0);
  const special = (reason: BlockReason): AddressClass => ({ kind: 'special', reason });

  if (zeroUpTo(15)) return special(b[15] === 1 ? 'loopback' : 'unspecified');
  if (zeroUpTo(10) && word(5) === 0xffff) return classifyIPv4(v4At(12)); // ::ffff:a.b.c.d (mapped)
  if (zeroUpTo(8) && word(4) === 0xffff && word(5) === 0) return classifyIPv4(v4At(12)); // ::ffff:0:a.b.c.d (SIIT)
  if (zeroUpTo(12)) return special('ipv4-compatible'); // ::a.b.c.d, deprecated
  if (word(0) === 0x64 && word(1) === 0xff9b && b.subarray(4, 12).every((x) => x === 0)) return classifyIPv4(v4At(12)); // NAT64
  if (word(0) === 0x64 && word(1) === 0xff9b && word(2) === 1) return special('nat64-local');
  if (word(0) === 0x2002) return classifyIPv4(v4At(2)); // 6to4
  if (word(0) === 0x2001 && word(1) === 0) return special('teredo');
  if (word(0) === 0x2001 && word(1) === 0x0db8) return special('documentation');
  if (word(0) === 0x2001 && word(1) < 0x0200) return special('reserved'); // IETF protocol assignments
  if (word(0) === 0x0100 && word(1) === 0 && word(2) === 0 && word(3) === 0) return special('reserved'); // discard-only
  if ((word(0) & 0xfe00) === 0xfc00) return special('unique-local');
  if ((word(0) & 0xffc0) === 0xfe80) return special('link-local');
  if ((word(0) & 0xffc0) === 0xfec0) return special('site-local');
  if ((word(0) & 0xff00) === 0xff00) return special('multicast');
  if ((word(0) & 0xe000) !== 0x2000) return special('reserved'); // outside global unicast 2000::/3
  return { kind: 'public' };
}

function ipv4ToNumber(a: string): number {
  return a.split('.').reduce((n, part) => ((n << 8) | Number(part)) >>> 0, 0);
}

/** 16 bytes of an IPv6 address (zone id ignored), or null when it is not one. */
export function parseIPv6(address: string): Uint8Array | null {
  let s = address.replace(/%.*$/, '');
  if (!isIPv6(s)) return null;
  // Rewrite a trailing dotted IPv4 part as two hex groups: ::ffff:127.0.0.1 → ::ffff:7f00:1.
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s)?.[1];
  if (v4 !== undefined) {
    const n = ipv4ToNumber(v4);
    s = `${s.slice(0, -v4.length)}${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head = '', rest] = s.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = rest === undefined || rest === '' ? [] : rest.split(':');
  const fill = rest === undefined ? 0 : 8 - left.length - right.length;
  const words = [...left, ...Array<string>(Math.max(fill, 0)).fill('0'), ...right].map((w) => parseInt(w, 16));
  if (words.length !== 8 || words.some((w) => !Number.isInteger(w) || w < 0 || w > 0xffff)) return null;
  const out = new Uint8Array(16);
  words.forEach((w, i) => {
    out[2 * i] = w >> 8;
    out[2 * i + 1] = w & 0xff;
  });
  return out;
}

/** True when two textual addresses denote the same IP (IPv6 compared by value). */
export function sameAddress(a: string, b: string): boolean {
  if (isIPv4(a) || isIPv4(b)) return a === b;
  const x = parseIPv6(a);
  const y = parseIPv6(b);
  return x !== null && y !== null && Buffer.from(x).equals(Buffer.from(y));
}
