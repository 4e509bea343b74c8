/**
 * Turns a vault credential into ssh2 authentication settings, checked before
 * any connection is made.
 *
 * Invariants:
 * - Only `ssh_key` (private key, optional passphrase) and `ssh_password`;
 *   any other kind is CREDENTIAL_KIND_MISMATCH (src/rules/credential-fit.ts).
 * - The private key is parsed here first, so a wrong passphrase or a broken
 *   key fails with SECRET_INVALID before anything is sent; no message or
 *   detail quotes the key, the passphrase or the password, and ssh2's own
 *   parse error text is dropped (kept only as `cause`, which is never shown).
 * - The secret stays in memory: never in argv, environment or a file.
 */
import { ssh2 } from '../../libraries.js';
import { assertCredentialFits } from '../../rules/credential-fit.js';
import { PosternError } from '../../rules/errors.js';
import type { SshCredential } from './types.js';

export type SshAuth =
  | { readonly privateKey: Buffer; readonly passphrase?: Buffer }
  | { readonly password: string };

export function sshAuth(credential: SshCredential | null, credentialName: string): SshAuth {
  if (credential === null) {
    throw new PosternError('CREDENTIAL_MISSING', `the credential ${credentialName} is not in the vault`, {
      details: { credential: credentialName },
      sideEffectStarted: false,
    });
  }
  assertCredentialFits({ kind: 'ssh' }, credential.meta);
  const { kind, name } = credential.meta;
  if (kind === 'ssh_password') {
    const password = credential.secret.password;
    if (password === undefined || password.length === 0) throw missingPart(name, 'password');
    return { password: Buffer.from(password).toString('utf8') };
  }
  if (kind === 'ssh_key') {
    const key = credential.secret.private_key;
    if (key === undefined || key.length === 0) throw missingPart(name, 'private_key');
    const privateKey = Buffer.from(key);
    const pass = credential.secret.key_passphrase;
    const passphrase = pass === undefined || pass.length === 0 ? undefined : Buffer.from(pass);
    const parsed = ssh2().utils.parseKey(privateKey, passphrase);
    if (parsed instanceof Error || (Array.isArray(parsed) && parsed.length === 0)) {
      throw new PosternError('SECRET_INVALID', `the SSH key ${name} could not be read (wrong passphrase or unsupported format)`, {
        details: { credential: name },
        sideEffectStarted: false,
        cause: parsed instanceof Error ? new Error('key parse failed') : undefined,
      });
    }
    return passphrase === undefined ? { privateKey } : { privateKey, passphrase };
  }
  throw new PosternError('INTERNAL', `the credential ${name} passed the SSH kind check as ${kind}`);
}

function missingPart(name: string, part: string): PosternError {
  return new PosternError('CREDENTIAL_MISSING', `the credential ${name} has no ${part}`, {
    details: { credential: name, part },
    sideEffectStarted: false,
  });
}
