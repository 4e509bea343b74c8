/**
 * An AWS Signature Version 4 verifier for tests, written from the published
 * algorithm independently of src/executors/http/sigv4.ts: it rebuilds the
 * canonical request from what arrived on the wire (method, raw path and
 * query, the signed headers' values as received, the body's hash) and
 * recomputes the signature with its own copy of the secret, the way a
 * service does. Not a general implementation: enough for the requests the
 * tests send (no chunked S3 uploads, no presigned URLs).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

export interface VerifierKey {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

export type Verdict = { readonly ok: true } | { readonly ok: false; readonly why: string };

const AUTH = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$/;

function enc(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function canonicalQuery(q: string): string {
  if (q === '') return '';
  return q
    .split('&')
    .map((p) => {
      const [n = '', v = ''] = p.split(/=(.*)/s);
      const dec = (x: string): string => decodeURIComponent(x.replace(/\+/g, '%20'));
      return [enc(dec(n)), enc(dec(v))];
    })
    .sort((a, b) => (a[0]! < b[0]! ? -1 : a[0]! > b[0]! ? 1 : a[1]! < b[1]! ? -1 : a[1]! > b[1]! ? 1 : 0))
    .map(([n, v]) => `${n}=${v}`)
    .join('&');
}

export function verifySigV4(req: IncomingMessage, body: Buffer, key: VerifierKey, expect: { region: string; service: string; now: Date }): Verdict {
  const m = AUTH.exec(req.headers.authorization ?? '');
  if (m === null) return { ok: false, why: 'no SigV4 Authorization header' };
  const [, id, day, region, service, signed, signature] = m as unknown as string[];
  if (id !== key.accessKeyId) return { ok: false, why: 'unknown access key id' };
  if (region !== expect.region || service !== expect.service) return { ok: false, why: `scope ${region}/${service}` };
  const date = String(req.headers['x-amz-date'] ?? '');
  if (!/^\d{8}T\d{6}Z$/.test(date) || date.slice(0, 8) !== day) return { ok: false, why: 'bad x-amz-date' };
  const at = Date.parse(`${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`);
  if (Math.abs(at - expect.now.getTime()) > 15 * 60_000) return { ok: false, why: 'request time too skewed' };
  const names = signed!.split(';');
  if (!names.includes('host') || !names.includes('x-amz-date')) return { ok: false, why: 'host and x-amz-date must be signed' };
  if (key.sessionToken !== undefined && (req.headers['x-amz-security-token'] !== key.sessionToken || !names.includes('x-amz-security-token'))) {
    return { ok: false, why: 'session token missing or not signed' };
  }
  // Every header received must be signed here (the tests expect Postern to sign all it sends).
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const n = req.rawHeaders[i]!.toLowerCase();
    if (n !== 'authorization' && n !== 'connection' && !names.includes(n)) return { ok: false, why: `header ${n} not signed` };
  }
  const values = new Map<string, string[]>();
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const n = req.rawHeaders[i]!.toLowerCase();
    values.set(n, [...(values.get(n) ?? []), req.rawHeaders[i + 1]!.trim().replace(/ +/g, ' ')]);
  }
  const url = req.url ?? '/';
  const qi = url.indexOf('?');
  const path = qi === -1 ? url : url.slice(0, qi);
  const query = qi === -1 ? '' : url.slice(qi + 1);
  // The path arrived encoded once; every service but S3 signs each segment encoded once more.
  const canonicalPath = service === 's3' ? path : path.split('/').map(enc).join('/');
  const headerBlock = names.map((n) => `${n}:${(values.get(n) ?? []).join(',')}\n`).join('');
  const payload = createHash('sha256').update(body).digest('hex');
  const creq = [req.method ?? '', canonicalPath, canonicalQuery(query), headerBlock, signed, payload].join('\n');
  const sts = ['AWS4-HMAC-SHA256', date, `${day}/${region}/${service}/aws4_request`, createHash('sha256').update(creq).digest('hex')].join('\n');
  let k: Buffer = createHmac('sha256', `AWS4${key.secretAccessKey}`).update(day).digest();
  for (const part of [region, service, 'aws4_request']) k = createHmac('sha256', k).update(part).digest();
  const want = createHmac('sha256', k).update(sts).digest();
  return timingSafeEqual(want, Buffer.from(signature!, 'hex')) ? { ok: true } : { ok: false, why: 'signature does not match' };
}
