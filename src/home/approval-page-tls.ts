/**
 * The approval page's TLS certificate for a LAN address: a self-signed
 * P-256 certificate for exactly that IP address, made at enable time with
 * openssl, its private key kept in the vault as the `tls_key` credential
 * APPROVAL_PAGE_TLS_CREDENTIAL (never a file), the SHA-256 of its DER in the
 * MAC'd page authorization — the fingerprint the operator checks in the
 * browser. The daemon serves it only when the vault's certificate has that
 * fingerprint.
 *
 * Invariants: the key is written by openssl into a fresh 0700 directory,
 * read, and the directory removed before anything else happens; nothing of
 * the key is printed.
 */
import { execFile } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { PosternError } from '../rules/errors.js';

export const APPROVAL_PAGE_TLS_CREDENTIAL = 'approval-page.tls';
const VALID_DAYS = 825;

interface PageCertificate {
  readonly keyPem: Buffer;
  readonly certDer: Buffer;
  readonly sha256: string;
}

export function certificateSha256(der: Uint8Array): string {
  return createHash('sha256').update(der).digest('hex');
}

/** The certificate as PEM, for the TLS server. */
export function certificatePem(der: Uint8Array): string {
  return new X509Certificate(Buffer.from(der)).toString();
}

/** A new key and self-signed certificate for the IP address `bind`. Throws USAGE for a name, INTERNAL when openssl fails. */
export async function makePageCertificate(bind: string): Promise<PageCertificate> {
  if (isIP(bind) === 0) throw new PosternError('USAGE', '--bind takes an IP address of this machine (e.g. 192.168.1.20)');
  const dir = await mkdtemp(join(tmpdir(), 'postern-tls-'));
  try {
    const key = join(dir, 'key.pem');
    const cert = join(dir, 'cert.der');
    try {
      await promisify(execFile)('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-outform', 'DER', '-days', String(VALID_DAYS), '-subj', '/CN=Postern approval page', '-addext', `subjectAltName=IP:${bind}`], { timeout: 30_000 });
    } catch {
      throw new PosternError('INTERNAL', 'openssl could not make the certificate (is openssl installed?)');
    }
    const certDer = await readFile(cert);
    return { keyPem: await readFile(key), certDer, sha256: certificateSha256(certDer) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
