/**
 * The secrets a credential contributes to redaction: each secret part as
 * stored, plus every derived string the executors put on the wire for it
 * (`Bearer <token>`, `<user>:<password>` and its `Basic` header value,
 * `<header>: <value>`, `<param>=<encoded value>`), and for SSH keys each
 * base64 line of the key file's body and the body joined. Derived forms matter most
 * for short secrets, which are otherwise only matched as whole values, and
 * for basic auth, whose base64 does not contain the password's base64.
 *
 * Invariants: pure; every form is labelled with the credential's name so
 * markers say which credential was redacted, never anything about its value.
 * Keep in step with src/executors/http/credential-injection.ts (a test
 * injects each kind and redacts what the server echoed).
 */
import type { CredentialKind } from '../vault/types.js';
import { percentEncodeComponent } from './encodings.js';
import type { NamedSecret } from './redactor.js';

/** The parts of a vault Credential that redaction needs (a vault Credential fits). */
export interface RedactableCredential {
  readonly meta: { readonly name: string; readonly kind: CredentialKind; readonly fields: Readonly<Record<string, string>> };
  readonly secret: Readonly<Record<string, Uint8Array>>;
}

const utf8 = (s: string): Uint8Array => Buffer.from(s, 'utf8');

/** Lines shorter than this are not matched on their own (the last line of a body can be a few characters). */
const MIN_KEY_LINE = 16;

function armouredBodyForms(pem: string): Uint8Array[] {
  const body = pem
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('-----') && !l.includes(':'));
  const out = body.filter((l) => l.length >= MIN_KEY_LINE).map(utf8);
  if (body.length > 1) out.push(utf8(body.join('')));
  return out;
}

function urlPassword(text: string): string {
  try {
    return decodeURIComponent(new URL(text).password);
  } catch {
    return '';
  }
}

export function injectedForms(credential: RedactableCredential): NamedSecret[] {
  const { name, kind, fields } = credential.meta;
  const parts = Object.values(credential.secret);
  const forms: Uint8Array[] = [...parts];
  const part = (p: string): Uint8Array | undefined => credential.secret[p];
  switch (kind) {
    case 'http_bearer': {
      const token = part('token');
      if (token) forms.push(Buffer.concat([utf8('Bearer '), token]));
      break;
    }
    case 'http_basic': {
      const password = part('password');
      if (password) {
        const pair = Buffer.concat([utf8(`${fields['username'] ?? ''}:`), password]);
        forms.push(pair, utf8(`Basic ${pair.toString('base64')}`));
      }
      break;
    }
    case 'http_header': {
      const value = part('value');
      if (value) forms.push(Buffer.concat([utf8(`${fields['header'] ?? ''}: `), value]));
      break;
    }
    case 'http_query': {
      const value = part('value');
      const param = fields['param'] ?? '';
      if (value) forms.push(utf8(`${percentEncodeComponent(utf8(param))}=${percentEncodeComponent(value)}`), utf8(`${param}=${percentEncodeComponent(value)}`));
      break;
    }
    case 'ssh_key':
    case 'tls_key': {
      // A remote command may print part of a key file (`grep -v BEGIN`, `tr -d '\n'`): each
      // base64 line of the armoured body and the body joined without line breaks are secrets too.
      const key = part('private_key');
      if (key) forms.push(...armouredBodyForms(Buffer.from(key).toString('utf8')));
      break;
    }
    case 'oauth_client_credentials':
    case 'oauth_refresh_token':
    case 'github_app': {
      // A minted token is learnt as { access_token } (daemon/services/minted-tokens.ts); it goes out as `Bearer <token>`.
      const token = part('access_token');
      if (token) forms.push(Buffer.concat([utf8('Bearer '), token]));
      const key = part('private_key');
      if (key) forms.push(...armouredBodyForms(Buffer.from(key).toString('utf8')));
      break;
    }
    case 'aws_sigv4':
      // The secret key is used only inside the HMAC chain; the session token is sent as is (a part).
      break;
    case 'ssh_password':
      break;
    case 'postgres_url': {
      // The password alone is what a database error or a log line would echo.
      const url = part('url');
      const password = url === undefined ? '' : urlPassword(Buffer.from(url).toString('utf8'));
      if (password.length >= 4) forms.push(utf8(password));
      break;
    }
  }
  return forms.filter((bytes) => bytes.length > 0).map((bytes) => ({ name, bytes }));
}
