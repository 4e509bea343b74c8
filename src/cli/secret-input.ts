/**
 * Reads and checks the value of a secret for `secret add` and `secret rotate`.
 * Sources: a file (`--from-file`), standard input (`--stdin`), or a prompt
 * without echo on the terminal. Values are validated for their kind before
 * they reach the vault: header-borne values may not contain CR, LF or NUL, and
 * SSH private keys must parse (with their passphrase when encrypted).
 */
import { createHash, createPrivateKey } from 'node:crypto';
import type { ParsedKey } from 'ssh2';
import { ssh2 } from '../libraries.js';
import type { CredentialKind } from '../vault/types.js';
import { PosternError } from '../rules/errors.js';
import { readLineFile } from './context.js';
import { canPrompt, promptHidden } from './tty.js';

export interface SecretSourceOpts {
  fromFile?: string;
  stdin?: boolean;
  keyPassphraseFile?: string;
  sessionTokenFile?: string;
  clientSecretFile?: string;
}

const MAX_SECRET_BYTES = 64 * 1024;

async function readStdin(): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const c of process.stdin as AsyncIterable<Buffer>) {
    total += c.length;
    if (total > MAX_SECRET_BYTES) throw new PosternError('SECRET_INVALID', `the value on standard input is larger than ${MAX_SECRET_BYTES} bytes`);
    chunks.push(c);
  }
  const all = Buffer.concat(chunks);
  for (const c of chunks) c.fill(0);
  return all;
}

function dropTrailingNewline(b: Uint8Array): Uint8Array {
  let end = b.length;
  if (end > 0 && b[end - 1] === 0x0a) end--;
  if (end > 0 && b[end - 1] === 0x0d) end--;
  return b.subarray(0, end);
}

/** Reads the raw value from the chosen source. `multiline` keeps the bytes as they are (keys). */
async function readValue(opts: SecretSourceOpts, prompt: string, multiline: boolean): Promise<Uint8Array> {
  if (opts.fromFile !== undefined && opts.stdin === true) {
    throw new PosternError('USAGE', 'use either --from-file or --stdin, not both');
  }
  let value: Uint8Array;
  if (opts.fromFile !== undefined) {
    value = multiline ? await readWhole(opts.fromFile) : await readLineFile(opts.fromFile, 'secret');
  } else if (opts.stdin === true) {
    const raw = await readStdin();
    value = multiline ? raw : Uint8Array.from(dropTrailingNewline(raw));
  } else if (multiline) {
    throw new PosternError('USAGE', 'an SSH key is read from a file or standard input: pass --from-file FILE or --stdin');
  } else if (canPrompt()) {
    value = promptHidden(prompt);
  } else {
    throw new PosternError('USAGE', 'no terminal to ask for the value: pass --from-file FILE or --stdin');
  }
  if (value.length === 0) throw new PosternError('SECRET_INVALID', 'the secret value is empty');
  if (value.length > MAX_SECRET_BYTES) throw new PosternError('SECRET_INVALID', `the secret value is larger than ${MAX_SECRET_BYTES} bytes`);
  return value;
}

async function readWhole(path: string): Promise<Uint8Array> {
  const { readFile } = await import('node:fs/promises');
  try {
    return new Uint8Array(await readFile(path));
  } catch (e) {
    throw new PosternError('INPUT_INVALID', `cannot read ${path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

function assertHeaderSafe(v: Uint8Array, what: string): void {
  if (v.some((b) => b === 0x0d || b === 0x0a || b === 0x00)) {
    throw new PosternError('SECRET_INVALID', `the ${what} contains a line break or NUL byte, which cannot be sent in a request`);
  }
}

/** An optional secret part read from its own file (one line; an empty file adds nothing). */
async function addOptionalPart(secret: Record<string, Uint8Array>, part: string, file: string | undefined, what: string): Promise<void> {
  if (file === undefined) return;
  const value = await readLineFile(file, what);
  assertHeaderSafe(value, part);
  if (value.length > 0) secret[part] = value;
}

interface ParsedSshKey {
  readonly keyType: string;
  readonly publicFingerprint: string;
}

/** Parses an SSH private key; encrypted keys need their passphrase. Never echoes key material. */
function parseSshPrivateKey(key: Uint8Array, passphrase: Uint8Array | undefined): ParsedSshKey {
  const parsed: ParsedKey | Error = ssh2().utils.parseKey(Buffer.from(key), passphrase === undefined ? undefined : Buffer.from(passphrase));
  const first: ParsedKey | Error | undefined = Array.isArray(parsed) ? (parsed as ParsedKey[])[0] : parsed;
  if (first === undefined || first instanceof Error) {
    const msg = first instanceof Error ? first.message : '';
    if (/no passphrase given/i.test(msg)) {
      throw new PosternError('SECRET_INVALID', 'the SSH key is encrypted: give its passphrase with --key-passphrase-file FILE (or run in a terminal to be asked)');
    }
    if (/bad passphrase|integrity check failed/i.test(msg)) {
      throw new PosternError('SECRET_INVALID', 'the SSH key could not be decrypted: wrong key passphrase');
    }
    throw new PosternError('SECRET_INVALID', 'the file is not an SSH private key in a supported format (OpenSSH, PEM or PKCS#8; ed25519, ecdsa or rsa)');
  }
  if (!first.isPrivateKey()) {
    throw new PosternError('SECRET_INVALID', 'this is a public key; give the private key file');
  }
  const pub = first.getPublicSSH();
  const fp = `SHA256:${createHash('sha256').update(pub).digest('base64').replace(/=+$/, '')}`;
  return { keyType: first.type, publicFingerprint: fp };
}

function isEncryptedKeyError(key: Uint8Array): boolean {
  const r: ParsedKey | Error = ssh2().utils.parseKey(Buffer.from(key));
  const first: ParsedKey | Error | undefined = Array.isArray(r) ? (r as ParsedKey[])[0] : r;
  return first instanceof Error && /no passphrase given/i.test(first.message);
}

export interface SecretInput {
  readonly secret: Record<string, Uint8Array>;
  readonly fields: Record<string, string>;
}

/** Reads the secret parts for `kind` and returns them with the kind's public fields. */
export async function readSecretInput(
  kind: CredentialKind,
  opts: SecretSourceOpts,
  fields: Record<string, string>,
): Promise<SecretInput> {
  switch (kind) {
    case 'http_bearer': {
      const token = await readValue(opts, 'Token (input hidden): ', false);
      assertHeaderSafe(token, 'token');
      return { secret: { token }, fields };
    }
    case 'http_basic': {
      const password = await readValue(opts, 'Password (input hidden): ', false);
      assertHeaderSafe(password, 'password');
      return { secret: { password }, fields };
    }
    case 'http_header':
    case 'http_query': {
      const value = await readValue(opts, 'Value (input hidden): ', false);
      assertHeaderSafe(value, 'value');
      return { secret: { value }, fields };
    }
    case 'aws_sigv4': {
      const key = await readValue(opts, 'Secret access key (input hidden): ', false);
      assertHeaderSafe(key, 'secret_access_key');
      const secret: Record<string, Uint8Array> = { secret_access_key: key };
      await addOptionalPart(secret, 'session_token', opts.sessionTokenFile, 'session token');
      return { secret, fields };
    }
    case 'oauth_client_credentials': {
      const secret = await readValue(opts, 'Client secret (input hidden): ', false);
      assertHeaderSafe(secret, 'client_secret');
      return { secret: { client_secret: secret }, fields };
    }
    case 'oauth_refresh_token': {
      const refresh = await readValue(opts, 'Refresh token (input hidden): ', false);
      assertHeaderSafe(refresh, 'refresh_token');
      const secret: Record<string, Uint8Array> = { refresh_token: refresh };
      await addOptionalPart(secret, 'client_secret', opts.clientSecretFile, 'client secret');
      return { secret, fields };
    }
    case 'github_app': {
      const privateKey = await readValue(opts, '', true);
      try {
        const key = createPrivateKey({ key: Buffer.from(privateKey), format: 'pem' });
        if (key.asymmetricKeyType !== 'rsa') throw new Error('not rsa');
      } catch {
        throw new PosternError('SECRET_INVALID', 'a GitHub App key is the RSA private key PEM file GitHub gave (PKCS#1 or PKCS#8)');
      }
      return { secret: { private_key: privateKey }, fields };
    }
    case 'tls_key':
      throw new PosternError('USAGE', 'a tls_key is made by `postern approvals page enable --bind ADDR`, not added by hand');
    case 'ssh_password': {
      const password = await readValue(opts, 'SSH password (input hidden): ', false);
      return { secret: { password }, fields };
    }
    case 'postgres_url': {
      const url = await readValue(opts, 'PostgreSQL URL, postgres://… (input hidden): ', false);
      if (!/^postgres(?:ql)?:\/\/[\x21-\x7E]+$/.test(Buffer.from(url).toString('latin1'))) {
        throw new PosternError('SECRET_INVALID', 'a PostgreSQL connection string is one postgres:// or postgresql:// URL (printable ASCII, no spaces)');
      }
      return { secret: { url }, fields };
    }
    case 'ssh_key': {
      const privateKey = await readValue(opts, '', true);
      let keyPass: Uint8Array | undefined;
      if (opts.keyPassphraseFile !== undefined) {
        keyPass = await readLineFile(opts.keyPassphraseFile, 'key passphrase');
      } else if (isEncryptedKeyError(privateKey) && canPrompt()) {
        keyPass = promptHidden('Key passphrase (input hidden): ');
      }
      const parsed = parseSshPrivateKey(privateKey, keyPass);
      const secret: Record<string, Uint8Array> = { private_key: privateKey };
      if (keyPass !== undefined && keyPass.length > 0) secret['key_passphrase'] = keyPass;
      return {
        secret,
        fields: { ...fields, key_type: parsed.keyType, public_fingerprint: parsed.publicFingerprint },
      };
    }
  }
}
