/**
 * Minting an access token from a lifecycle credential, through the same HTTP
 * executor as every other request (so the same IP policy and pinned
 * connector decide where it may connect):
 *   oauth_client_credentials → POST <token_url>, `grant_type=client_credentials`
 *     (+ `scope`), the client authenticated with HTTP Basic (RFC 6749 §2.3.1);
 *   oauth_refresh_token → POST <token_url>, `grant_type=refresh_token` (RFC 6749
 *     §6): a confidential client with HTTP Basic, a public one with `client_id`
 *     in the body; a rotated refresh token in the answer is returned too;
 *   github_app → POST <api>/app/installations/<id>/access_tokens with an
 *     RS256 JWT signed with the app's key (github-app-jwt.ts).
 *
 * Invariants:
 * - the endpoint comes from the target's `auth` in the catalog, never from a
 *   call's arguments;
 * - a 4xx answer (other than 408 and 429) or an answer without a usable token
 *   is CREDENTIAL_REJECTED (the operator must act); a 5xx, 408, 429, a
 *   timeout or a connection failure is CREDENTIAL_UNAVAILABLE (retry later);
 *   a connection refused by egress policy stays EGRESS_BLOCKED;
 * - no error carries the response body or any secret: only the status and,
 *   for OAuth, the registered `error` code when it is one;
 * - nothing here counts as the call's side effect: `side_effect_started` is
 *   false on every failure;
 * - a secret made here (the GitHub App JWT) is handed to `learn`, and sent
 *   only once `learn` resolved: the redactor knows it before any echo can
 *   bring it back (a failed `learn` sends nothing).
 */
import { PosternError, isPosternError } from '../../rules/errors.js';
import { executeHttp } from './execute.js';
import { isFieldValue } from './request-rules.js';
import { githubAppJwt } from './github-app-jwt.js';
import type { HttpCredential, HttpExecOptions } from './types.js';
import type { AuthPlacement } from '../../rules/credential-fit.js';

interface MintOptions {
  readonly allowPrivate: boolean;
  readonly timeouts?: HttpExecOptions['timeouts'];
  readonly signal?: AbortSignal;
  readonly resolve?: HttpExecOptions['resolve'];
  readonly now: () => Date;
  /** Teaches the redactor a secret made for this request (the GitHub App JWT) and when it expires. */
  readonly learn: (value: Uint8Array, validUntil: Date | null) => Promise<void>;
}

export interface Minted {
  readonly token: Uint8Array;
  readonly expiresInS: number | null;
  /** The new refresh token when the server rotated it (oauth_refresh_token); absent when it returned none. */
  readonly refreshToken?: Uint8Array;
}

/** The auth kinds whose credential is exchanged for a short-lived token before a call. */
export type MintingAuth = Extract<AuthPlacement, { kind: 'oauth_client_credentials' | 'oauth_refresh_token' | 'github_app' }>;

export function isMintingAuth(auth: AuthPlacement | undefined): auth is MintingAuth {
  return auth?.kind === 'oauth_client_credentials' || auth?.kind === 'oauth_refresh_token' || auth?.kind === 'github_app';
}

const MAX_TOKEN_BYTES = 16 * 1024;
const utf8 = (s: string): Buffer => Buffer.from(s, 'utf8');
/** application/x-www-form-urlencoded, as RFC 6749 Appendix B asks for the client id and secret. */
const formEncode = (b: Uint8Array): string => encodeURIComponent(Buffer.from(b).toString('utf8')).replace(/%20/g, '+').replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

function rejected(name: string, why: string, details: Record<string, string | number> = {}): PosternError {
  return new PosternError('CREDENTIAL_REJECTED', `credential ${name}: ${why}; rotate it (\`postern secret rotate ${name}\`) or fix the target's auth`, {
    details: { credential: name, ...details },
    sideEffectStarted: false,
  });
}

function unavailable(name: string, why: string, details: Record<string, string | number> = {}): PosternError {
  return new PosternError('CREDENTIAL_UNAVAILABLE', `credential ${name}: ${why}; nothing was sent, try again later`, {
    details: { credential: name, ...details },
    sideEffectStarted: false,
  });
}

interface Exchange {
  readonly url: URL;
  readonly credential: HttpCredential | null;
  readonly body: Uint8Array;
  readonly contentType: string;
  readonly accept: string;
  readonly tokenField: string;
  /** A secret made for this exchange, sent as its credential (the GitHub App JWT), and when it expires. */
  readonly made?: { readonly value: Uint8Array; readonly validUntil: Date };
}

/** An OAuth 2.0 token request (RFC 6749 §4.4, §6): the form, the scopes, and HTTP Basic client authentication (§2.3.1) when there is a client secret. */
function oauthExchange(tokenUrl: string, name: string, form: URLSearchParams, scopes: readonly string[], client: { readonly id: string; readonly secret: Uint8Array } | null): Exchange {
  if (scopes.length > 0) form.set('scope', scopes.join(' '));
  return {
    url: new URL(tokenUrl),
    credential: client === null ? null : { meta: { name, kind: 'http_basic', fields: { username: formEncode(utf8(client.id)) } }, secret: { password: utf8(formEncode(client.secret)) } },
    body: utf8(form.toString()),
    contentType: 'application/x-www-form-urlencoded',
    accept: 'application/json',
    tokenField: 'access_token',
  };
}

function exchangeFor(credential: HttpCredential, auth: MintingAuth, now: Date): Exchange {
  const name = credential.meta.name;
  switch (auth.kind) {
    case 'oauth_client_credentials': {
      const clientId = credential.meta.fields['client_id'];
      const secret = credential.secret['client_secret'];
      if (clientId === undefined || clientId === '' || secret === undefined || secret.length === 0) throw rejected(name, 'the client id or client secret is missing');
      return oauthExchange(auth.tokenUrl, name, new URLSearchParams({ grant_type: 'client_credentials' }), auth.scopes, { id: clientId, secret });
    }
    case 'oauth_refresh_token': {
      const clientId = credential.meta.fields['client_id'];
      const refresh = credential.secret['refresh_token'];
      const secret = credential.secret['client_secret'];
      if (clientId === undefined || clientId === '' || refresh === undefined || refresh.length === 0) throw rejected(name, 'the client id or refresh token is missing');
      const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: Buffer.from(refresh).toString('utf8') });
      // A public client (no secret) names itself in the form; a confidential one authenticates with Basic.
      if (secret === undefined) form.set('client_id', clientId);
      return oauthExchange(auth.tokenUrl, name, form, auth.scopes, secret === undefined ? null : { id: clientId, secret });
    }
    case 'github_app': {
      const appId = credential.meta.fields['app_id'];
      const installation = credential.meta.fields['installation_id'];
      const key = credential.secret['private_key'];
      if (appId === undefined || installation === undefined || !/^[0-9]{1,20}$/.test(installation) || key === undefined) throw rejected(name, 'the app id, installation id or private key is missing');
      let signed: ReturnType<typeof githubAppJwt>;
      try {
        signed = githubAppJwt(appId, key, now);
      } catch {
        throw rejected(name, 'the private key cannot sign (not an RSA private key PEM)');
      }
      const jwt = utf8(signed.jwt);
      return {
        url: new URL(`${auth.api}/app/installations/${installation}/access_tokens`),
        credential: { meta: { name, kind: 'http_bearer', fields: {} }, secret: { token: jwt } },
        made: { value: jwt, validUntil: signed.expiresAt },
        body: new Uint8Array(),
        contentType: 'application/json',
        accept: 'application/vnd.github+json',
        tokenField: 'token',
      };
    }
  }
}

class NotLearnt extends Error {}

/** `learn` the made secret; its failure (whatever it says) is a NotLearnt, so nothing is sent. */
async function learnMade(name: string, made: NonNullable<Exchange['made']>, learn: MintOptions['learn']): Promise<void> {
  try {
    await learn(made.value, made.validUntil);
  } catch {
    throw new NotLearnt(`credential ${name}: not learnt`);
  }
}

/** The lifetime in seconds: OAuth's `expires_in`, or GitHub's `expires_at` measured against the daemon's clock. */
function lifetimeOf(body: Record<string, unknown>, now: Date): number | null {
  const inS = body['expires_in'];
  if (typeof inS === 'number' && Number.isFinite(inS) && inS > 0) return inS;
  if (typeof inS === 'string' && /^[0-9]{1,9}$/.test(inS) && Number(inS) > 0) return Number(inS);
  const at = body['expires_at'];
  if (typeof at === 'string') {
    const ms = Date.parse(at) - now.getTime();
    if (Number.isFinite(ms) && ms > 0) return ms / 1000;
  }
  return null;
}

/** One token request to the endpoint the target's auth fixes; see the header for what each failure means. */
export async function mintToken(credential: HttpCredential, auth: MintingAuth, opts: MintOptions): Promise<Minted> {
  const name = credential.meta.name;
  const now = opts.now();
  const x = exchangeFor(credential, auth, now);
  let result;
  try {
    if (x.made !== undefined) await learnMade(name, x.made, opts.learn);
    result = await executeHttp(
      {
        origin: x.url.origin,
        method: 'POST',
        path: x.url.pathname,
        query: [],
        headers: [['accept', x.accept]],
        body: { contentType: x.contentType, bytes: x.body },
      },
      {
        credential: x.credential,
        allowPrivate: opts.allowPrivate,
        ...(opts.timeouts === undefined ? {} : { timeouts: opts.timeouts }),
        ...(opts.signal === undefined ? {} : { signal: opts.signal }),
        ...(opts.resolve === undefined ? {} : { resolve: opts.resolve }),
        maxResponseBytes: 64 * 1024,
      },
    );
  } catch (e) {
    if (e instanceof NotLearnt) throw unavailable(name, 'a token request secret could not be kept for redaction');
    if (isPosternError(e, 'EGRESS_BLOCKED')) throw new PosternError('EGRESS_BLOCKED', `credential ${name}: the token endpoint ${x.url.origin} is refused by egress policy`, { details: { credential: name }, sideEffectStarted: false });
    const code = isPosternError(e) ? e.code : 'INTERNAL';
    throw unavailable(name, `the token endpoint ${x.url.origin} could not be reached (${code === 'TARGET_TIMEOUT' ? 'timeout' : 'connection failed'})`);
  } finally {
    for (const part of Object.values(x.credential?.secret ?? {})) part.fill(0);
    x.body.fill(0);
  }
  const status = result.status;
  if (status >= 500 || status === 408 || status === 429) throw unavailable(name, `the token endpoint answered HTTP ${status}`, { status });
  const body = result.body.kind === 'json' && typeof result.body.value === 'object' && result.body.value !== null ? (result.body.value as Record<string, unknown>) : null;
  if (status < 200 || status > 299) {
    const oauthError = typeof body?.['error'] === 'string' && /^[a-z_]{1,40}$/.test(body['error']) ? ` (${body['error']})` : '';
    throw rejected(name, `the token endpoint refused it: HTTP ${status}${oauthError}`, { status });
  }
  const token = body?.[x.tokenField];
  if (typeof token !== 'string' || token === '' || token.length > MAX_TOKEN_BYTES || !isFieldValue(token) || /[^\x21-\x7e]/.test(token)) {
    throw rejected(name, 'the token endpoint answered without a usable token', { status });
  }
  const type = body?.['token_type'];
  if (auth.kind !== 'github_app' && typeof type === 'string' && type.toLowerCase() !== 'bearer') {
    throw rejected(name, `the token endpoint issued a ${type.slice(0, 20).replace(/[^A-Za-z0-9_-]/g, '?')} token; only bearer tokens are supported`);
  }
  const rotated = auth.kind === 'oauth_refresh_token' ? body?.['refresh_token'] : undefined;
  const refreshToken = typeof rotated === 'string' && rotated !== '' && rotated.length <= MAX_TOKEN_BYTES && !/[^\x21-\x7e]/.test(rotated) ? utf8(rotated) : undefined;
  return { token: utf8(token), expiresInS: lifetimeOf(body ?? {}, now), ...(refreshToken === undefined ? {} : { refreshToken }) };
}
