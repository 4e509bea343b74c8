/**
 * How each HTTP credential kind goes on the wire:
 *   http_bearer → `Authorization: Bearer <token>`
 *   http_basic  → `Authorization: Basic base64(<username>:<password>)`
 *   http_header → `<fields.header>: <value>`
 *   http_query  → `<fields.param>=<value>` appended to the query
 *   aws_sigv4   → a Signature Version 4 over the finished request (sigv4.ts),
 *                 with the region and service of the target's `auth`
 *   oauth_client_credentials, oauth_refresh_token, github_app
 *               → `Authorization: Bearer <access_token>`, the token the daemon
 *                 minted for this call (token-endpoint.ts, daemon/services/minted-tokens.ts)
 *                 and put in the call's copy of the credential as the part `access_token`
 * and which header or query name that makes off-limits to the spec.
 *
 * Invariants:
 * - Secret bytes are sent exactly (as Latin-1 header strings, or
 *   percent-encoded byte by byte in the query); bytes that would break the
 *   header framing (CR, LF, NUL, other controls) are refused, not escaped.
 * - Errors name the credential and the offending part, never a value.
 * - Keep in step with src/redaction/injected-forms.ts.
 */
import { credentialFit, credentialMisfitError } from '../../rules/credential-fit.js';
import { PosternError } from '../../rules/errors.js';
import { percentEncodeComponent } from '../../redaction/index.js';
import { credentialHeaderProblem } from '../../rules/http-headers.js';
import { isFieldValue, isToken } from './request-rules.js';
import type { HttpCredential } from './types.js';
import type { AuthPlacement } from '../../rules/credential-fit.js';
import { SIGV4_HEADERS, signSigV4, type SigV4Request } from './sigv4.js';

interface Injection {
  readonly headers: readonly (readonly [string, string])[];
  /** Already encoded `name=value`, or null. */
  readonly queryParam: { readonly name: string; readonly encoded: string } | null;
  /** Header names the spec may not set because the credential owns them. */
  readonly ownedHeaders: readonly string[];
  /** Signs the finished request (every other header fixed); returns the headers to append. */
  readonly sign?: (req: SigV4Request, now: Date) => readonly (readonly [string, string])[];
}

const NONE: Injection = { headers: [], queryParam: null, ownedHeaders: [] };

function refuse(credential: HttpCredential, message: string): PosternError {
  return new PosternError('SECRET_INVALID', `credential ${credential.meta.name}: ${message}`, {
    details: { credential: credential.meta.name, kind: credential.meta.kind },
    sideEffectStarted: false,
  });
}

/** The secret part as a Latin-1 string (one char per byte), refused if it cannot be a header value. */
function headerSafe(credential: HttpCredential, part: string): string {
  const bytes = credential.secret[part];
  if (bytes === undefined || bytes.length === 0) throw refuse(credential, `the secret part '${part}' is missing`);
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
  if (!isFieldValue(text)) throw refuse(credential, `the secret part '${part}' contains bytes not allowed in an HTTP header`);
  return text;
}

function field(credential: HttpCredential, name: string): string {
  const value = credential.meta.fields[name];
  if (value === undefined || value === '') throw refuse(credential, `the field '${name}' is missing`);
  return value;
}

export function credentialInjection(credential: HttpCredential | null, auth?: AuthPlacement): Injection {
  if (credential === null) return NONE;
  const kind = credential.meta.kind;
  switch (kind) {
    case 'http_bearer':
      return { headers: [['authorization', `Bearer ${headerSafe(credential, 'token')}`]], queryParam: null, ownedHeaders: [] };
    case 'http_basic': {
      // Base64 carries any bytes, so only the user-id syntax matters (RFC 7617: no ':').
      const username = field(credential, 'username');
      if (username.includes(':')) throw refuse(credential, "the username may not contain ':'");
      const password = credential.secret['password'];
      if (password === undefined || password.length === 0) throw refuse(credential, "the secret part 'password' is missing");
      const pair = Buffer.concat([Buffer.from(`${username}:`, 'utf8'), password]);
      return { headers: [['authorization', `Basic ${pair.toString('base64')}`]], queryParam: null, ownedHeaders: [] };
    }
    case 'http_header': {
      const header = field(credential, 'header').toLowerCase();
      if (!isToken(header) || credentialHeaderProblem(header) !== undefined) {
        throw refuse(credential, `the header name '${header}' cannot carry a credential`);
      }
      return { headers: [[header, headerSafe(credential, 'value')]], queryParam: null, ownedHeaders: [header] };
    }
    case 'http_query': {
      const param = field(credential, 'param');
      const value = credential.secret['value'];
      if (value === undefined || value.length === 0) throw refuse(credential, "the secret part 'value' is missing");
      return {
        headers: [],
        queryParam: { name: param, encoded: `${percentEncodeComponent(Buffer.from(param, 'utf8'))}=${percentEncodeComponent(value)}` },
        ownedHeaders: [],
      };
    }
    case 'aws_sigv4': {
      if (auth?.kind !== 'aws_sigv4') throw refuse(credential, "an aws_sigv4 credential needs a target with auth: { aws_sigv4: { region, service } }");
      const accessKeyId = field(credential, 'access_key_id');
      const secretAccessKey = credential.secret['secret_access_key'];
      if (secretAccessKey === undefined || secretAccessKey.length === 0) throw refuse(credential, "the secret part 'secret_access_key' is missing");
      const sessionToken = credential.secret['session_token'] === undefined ? undefined : headerSafe(credential, 'session_token');
      const scope = { region: auth.region, service: auth.service };
      return {
        headers: [],
        queryParam: null,
        ownedHeaders: [...SIGV4_HEADERS],
        sign: (req, now) => signSigV4(req, { accessKeyId, secretAccessKey, ...(sessionToken === undefined ? {} : { sessionToken }) }, scope, now).headers,
      };
    }
    case 'oauth_client_credentials':
    case 'oauth_refresh_token':
    case 'github_app': {
      if (credential.secret['access_token'] === undefined) throw refuse(credential, 'no access token was minted for this call');
      return { headers: [['authorization', `Bearer ${headerSafe(credential, 'access_token')}`]], queryParam: null, ownedHeaders: [] };
    }
    case 'ssh_key':
    case 'ssh_password':
    case 'tls_key':
    case 'postgres_url': {
      const fit = credentialFit({ kind: 'http' }, credential.meta);
      throw fit.fits ? refuse(credential, `a ${kind} credential cannot be used for HTTP`) : credentialMisfitError(credential.meta, fit);
    }
  }
}
