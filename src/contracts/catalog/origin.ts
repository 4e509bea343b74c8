/**
 * Origin and host normalization. Everything that shows or uses a target host
 * (approval card, authority, executor) uses the one form produced here, so the
 * screen can never show one host while the executor parses another. The WHATWG
 * URL parser does the heavy lifting (lowercase, IDN → punycode, numeric IPv4
 * forms → dotted quad, default port dropped); before it runs we refuse the
 * inputs it would silently "repair": userinfo, backslashes, whitespace and
 * control characters, paths, queries, fragments and trailing dots. Literal
 * private, loopback, link-local and metadata addresses need an explicit
 * opt-in; the executor still checks the address it actually connects to.
 */
import { hasSpaceControlOrBackslash } from '../text.js';

export interface NormalizedOrigin {
  readonly origin: string;
  readonly scheme: 'https' | 'http';
  readonly host: string;
  readonly port: number;
}

type OriginResult = { readonly ok: true; readonly value: NormalizedOrigin } | { readonly ok: false; readonly problem: string };

export type HostClass = { readonly kind: 'public' } | { readonly kind: 'private'; readonly reason: string };


function ipv4Class(a: number, b: number): string | undefined {
  if (a === 0) return 'the "this network" range 0.0.0.0/8';
  if (a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return 'a private range';
  if (a === 100 && b >= 64 && b <= 127) return 'the shared address range 100.64.0.0/10';
  if (a === 127) return 'loopback';
  if (a === 169 && b === 254) return 'link-local (includes cloud metadata 169.254.169.254)';
  if (a === 192 && b === 0) return 'the IETF protocol range 192.0.0.0/24';
  if (a === 198 && (b === 18 || b === 19)) return 'the benchmarking range 198.18.0.0/15';
  if (a >= 224) return 'multicast or reserved';
  return undefined;
}

function parseIpv4(host: string): [number, number, number, number] | undefined {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (m === null) return undefined;
  const parts = m.slice(1, 5).map(Number);
  if (parts.some((p) => p > 255)) return undefined;
  return parts as [number, number, number, number];
}

/** 8 groups of 16 bits from an unbracketed IPv6 literal made of hex groups (the WHATWG serialization). */
function parseIpv6(host: string): number[] | undefined {
  const halves = host.split('::');
  if (halves.length > 2) return undefined;
  const toGroups = (s: string): number[] | undefined => {
    if (s === '') return [];
    const groups = s.split(':');
    if (!groups.every((g) => /^[0-9a-f]{1,4}$/i.test(g))) return undefined;
    return groups.map((g) => parseInt(g, 16));
  };
  const head = toGroups(halves[0] ?? '');
  const tail = halves.length === 2 ? toGroups(halves[1] ?? '') : [];
  if (head === undefined || tail === undefined) return undefined;
  if (halves.length === 1) return head.length === 8 ? head : undefined;
  const fill = 8 - head.length - tail.length;
  if (fill < 1) return undefined;
  return [...head, ...new Array<number>(fill).fill(0), ...tail];
}

function ipv6Class(g: number[]): string | undefined {
  const [g0 = 0, g1 = 0, g2 = 0, g3 = 0, g4 = 0, g5 = 0, g6 = 0, g7 = 0] = g;
  const embedded = ipv4Class(g6 >> 8, g6 & 0xff);
  if (g.every((x) => x === 0)) return 'the unspecified address';
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0 && g6 === 0 && g7 === 1) return 'loopback';
  if (g0 === 0 && g1 === 0 && g2 === 0 && g3 === 0 && g4 === 0 && (g5 === 0xffff || g5 === 0)) {
    return embedded === undefined ? undefined : `an IPv4-mapped address in ${embedded}`;
  }
  if (g0 === 0x64 && g1 === 0xff9b) return embedded === undefined ? undefined : `a NAT64 address in ${embedded}`;
  if (g0 === 0x2002) {
    const e = ipv4Class(g1 >> 8, g1 & 0xff);
    return e === undefined ? undefined : `a 6to4 address in ${e}`;
  }
  if ((g0 & 0xfe00) === 0xfc00) return 'unique-local (fc00::/7)';
  if ((g0 & 0xffc0) === 0xfe80) return 'link-local (fe80::/10)';
  if ((g0 & 0xff00) === 0xff00) return 'multicast';
  return undefined;
}

/** Classifies a normalized host (as produced by the WHATWG URL parser; IPv6 in brackets). */
export function classifyHost(host: string): HostClass {
  if (host.startsWith('[') && host.endsWith(']')) {
    const groups = parseIpv6(host.slice(1, -1));
    if (groups === undefined) return { kind: 'private', reason: 'an IPv6 literal that cannot be classified' };
    const why = ipv6Class(groups);
    return why === undefined ? { kind: 'public' } : { kind: 'private', reason: why };
  }
  const v4 = parseIpv4(host);
  if (v4 !== undefined) {
    const why = ipv4Class(v4[0], v4[1]);
    return why === undefined ? { kind: 'public' } : { kind: 'private', reason: why };
  }
  if (host === 'localhost' || host.endsWith('.localhost')) return { kind: 'private', reason: 'a localhost name' };
  if (host.endsWith('.internal') || host.endsWith('.local') || host === 'metadata') {
    return { kind: 'private', reason: 'an internal name (.internal, .local)' };
  }
  return { kind: 'public' };
}

/** Where the opt-in goes: the origin's own target, beside it (`targets: {NAME: {http: {origin, allow_private}}}`). */
const WHERE_ALLOW_PRIVATE = 'inside this target\'s `http: {…}` block, beside `origin:`';

/** Normalizes an HTTP origin written in the catalog. `privateNetwork` is the target's explicit opt-in. */
export function normalizeOrigin(raw: string, privateNetwork: 'allowed' | 'refused'): OriginResult {
  const bad = (problem: string): OriginResult => ({ ok: false, problem });
  if (hasSpaceControlOrBackslash(raw)) return bad('must not contain whitespace, control characters or backslashes');
  if (raw.includes('@')) return bad('must not contain userinfo ("user@")');
  if (/[?#]/.test(raw)) return bad('must not contain a query or fragment');
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/([^/]*)\/?$/.exec(raw);
  if (m === null) return bad('must be scheme://host[:port] with no path');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return bad('is not a valid URL');
  }
  const scheme = url.protocol.slice(0, -1);
  if (scheme !== 'https' && scheme !== 'http') return bad(`scheme ${scheme} is not allowed (use https)`);
  if (url.username !== '' || url.password !== '') return bad('must not contain userinfo');
  const host = url.hostname;
  if (host === '') return bad('has no host');
  if (host.endsWith('.')) return bad('must not end with a dot');
  const hostClass = classifyHost(host);
  if (privateNetwork === 'refused') {
    if (scheme === 'http') return bad(`plain http is only allowed with allow_private: true (use https, or add it ${WHERE_ALLOW_PRIVATE})`);
    if (hostClass.kind === 'private') {
      return bad(`host ${host} is ${hostClass.reason}; set allow_private: true ${WHERE_ALLOW_PRIVATE} to allow it`);
    }
  }
  const port = url.port === '' ? (scheme === 'https' ? 443 : 80) : Number(url.port);
  if (port === 0) return bad('port 0 is not allowed');
  const origin = `${scheme}://${host}${url.port === '' ? '' : `:${url.port}`}`;
  return { ok: true, value: { origin, scheme, host, port } };
}

/** Normalizes an SSH host name or IP literal (IPv6 with or without brackets); same rules as origins. */
export function normalizeSshHost(raw: string): { readonly ok: true; readonly host: string } | { readonly ok: false; readonly problem: string } {
  if (raw === '') return { ok: false, problem: 'is empty' };
  if (hasSpaceControlOrBackslash(raw)) return { ok: false, problem: 'must not contain whitespace, control characters or backslashes' };
  if (/[@/?#%]/.test(raw)) return { ok: false, problem: 'must be a bare host name or IP address' };
  if (raw.startsWith('-')) return { ok: false, problem: 'must not start with "-"' };
  const bracketed = raw.includes(':') && !raw.startsWith('[') ? `[${raw}]` : raw;
  let url: URL;
  try {
    url = new URL(`https://${bracketed}/`);
  } catch {
    return { ok: false, problem: 'is not a valid host name or IP address' };
  }
  if (url.port !== '' || url.username !== '') return { ok: false, problem: 'must not include a port or user (use port: and user:)' };
  if (url.hostname.endsWith('.')) return { ok: false, problem: 'must not end with a dot' };
  return { ok: true, host: url.hostname };
}
