/**
 * From an origin string to the one IP address the call will connect to.
 * The origin must already be in WHATWG-normalized form (so numeric IPv4
 * spellings such as 2130706433, 0x7f000001, 0177.0.0.1 or 127.1 have become
 * 127.0.0.1 before approval, and what was approved is what is parsed here).
 * The host is resolved exactly once; every address it resolves to must pass
 * the egress policy, and the first is pinned for the connection.
 *
 * Invariants: nothing here opens a connection; every failure has
 * `sideEffectStarted: false`; messages name the host and address, never a
 * header or credential.
 */
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { PosternError } from '../../rules/errors.js';
import { safeCode } from './failures.js';
import { egressVerdict } from './ip-policy.js';
import type { ResolveHost } from './types.js';

export interface Origin {
  /** The normalized origin, e.g. `https://api.example.com:8443`. */
  readonly href: string;
  readonly protocol: 'http:' | 'https:';
  /** Host name or IP literal, without IPv6 brackets. */
  readonly host: string;
  readonly port: number;
  readonly isIpLiteral: boolean;
}

/** Origins already parsed (a catalog names few; each call to one parses nothing again). Bounded. */
const parsed = new Map<string, Origin>();
const MAX_PARSED = 256;

export function parseOrigin(origin: string): Origin {
  const known = parsed.get(origin);
  if (known !== undefined) return known;
  const o = Object.freeze(parseOriginOnce(origin));
  if (parsed.size >= MAX_PARSED) parsed.clear();
  parsed.set(origin, o);
  return o;
}

function parseOriginOnce(origin: string): Origin {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    throw new PosternError('INPUT_INVALID', 'the target origin is not a valid URL', { sideEffectStarted: false });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new PosternError('INPUT_INVALID', 'the target origin must use http or https', { sideEffectStarted: false });
  }
  if (url.origin !== origin) {
    throw new PosternError('INPUT_INVALID', 'the target origin is not in normalized form', {
      details: { expected: url.origin },
      sideEffectStarted: false,
    });
  }
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  return { href: url.origin, protocol: url.protocol, host, port, isIpLiteral: isIP(host) !== 0 };
}

export const systemResolver: ResolveHost = async (host) => {
  const answers = await lookup(host, { all: true, verbatim: true });
  return answers.map((a) => a.address);
};

export interface ResolveOptions {
  readonly allowPrivate: boolean;
  readonly resolve: ResolveHost;
  readonly timeoutMs: number;
  readonly signal: AbortSignal | undefined;
}

/** The address to connect to, after every resolved address passed the egress policy. */
export async function pinAddress(origin: Origin, opts: ResolveOptions): Promise<string> {
  const addresses = origin.isIpLiteral ? [origin.host] : await resolveWithin(origin.host, opts);
  if (addresses.length === 0) {
    throw new PosternError('TARGET_ERROR', `the host ${origin.host} did not resolve to any address`, {
      details: { host: origin.host },
      sideEffectStarted: false,
    });
  }
  for (const address of addresses) {
    const verdict = egressVerdict(address, opts.allowPrivate);
    if (!verdict.allowed) throw egressBlocked(origin.host, address, verdict.reason);
  }
  return addresses[0] ?? origin.host;
}

export function egressBlocked(host: string, address: string, reason: string): PosternError {
  return new PosternError('EGRESS_BLOCKED', `connection to ${host} refused: ${address} is a ${reason} address`, {
    details: { host, address, reason },
    sideEffectStarted: false,
  });
}

async function resolveWithin(host: string, opts: ResolveOptions): Promise<readonly string[]> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(
        new PosternError('TARGET_TIMEOUT', `resolving ${host} took longer than ${opts.timeoutMs} ms`, {
          details: { host, phase: 'resolve' },
          sideEffectStarted: false,
        }),
      );
    }, opts.timeoutMs);
    onAbort = () => reject(new PosternError('TARGET_ERROR', 'the request was aborted', { details: { host, reason: 'aborted' }, sideEffectStarted: false }));
    opts.signal?.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([
      opts.resolve(host).catch((e: unknown) => {
        throw new PosternError('TARGET_ERROR', `could not resolve ${host} (${safeCode(e)})`, {
          details: { host, error: safeCode(e) },
          sideEffectStarted: false,
        });
      }),
      deadline,
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) opts.signal?.removeEventListener('abort', onAbort);
  }
}
