/**
 * The one rule for whether a vault credential fits the target that names it:
 * an SSH target needs `ssh_key` or `ssh_password`; an HTTP target needs the
 * kind its `auth` declares (`bearer` → `http_bearer`, `basic` → `http_basic`,
 * `{ header }` → `http_header`, `{ query }` → `http_query`, `{ aws_sigv4 }` →
 * `aws_sigv4`, `{ oauth_client_credentials }` → `oauth_client_credentials`,
 * `{ oauth_refresh_token }` → `oauth_refresh_token`, `{ github_app }` → `github_app`), and for a header
 * or query credential the name the credential is sent under must be the one
 * the catalog declares — the catalog reserves that name against collisions, so
 * a credential sent under another name would slip past that reservation.
 *
 * Run when a catalog is accepted and when it is loaded (against the vault's
 * credential metadata), and by the executors before anything is sent. A
 * misfit is CREDENTIAL_KIND_MISMATCH, never CREDENTIAL_MISSING. Pure: facts
 * only, no secret bytes.
 */
import { PosternError } from './errors.js';
import { headerKey } from './http-headers.js';

/** Where an HTTP target puts its credential (the catalog's `auth`). */
export type AuthPlacement =
  | { readonly kind: 'bearer' }
  | { readonly kind: 'basic' }
  | { readonly kind: 'header'; readonly name: string }
  | { readonly kind: 'query'; readonly name: string }
  | { readonly kind: 'aws_sigv4'; readonly region: string; readonly service: string }
  /** `tokenUrl`: the normalized token endpoint (origin + path), fixed in the catalog. */
  | { readonly kind: 'oauth_client_credentials'; readonly tokenUrl: string; readonly scopes: readonly string[] }
  | { readonly kind: 'oauth_refresh_token'; readonly tokenUrl: string; readonly scopes: readonly string[] }
  /** `api`: the normalized GitHub API base (origin + optional path, no trailing slash), fixed in the catalog. */
  | { readonly kind: 'github_app'; readonly api: string };

/** What the credential is used for; an executor that does not know the target's `auth` checks the protocol only. */
type CredentialUse = { readonly kind: 'ssh' } | { readonly kind: 'http'; readonly auth?: AuthPlacement };

/** The public facts of a credential (a vault CredentialMeta fits). */
export interface CredentialFacts {
  readonly name: string;
  readonly kind: string;
  readonly fields: Readonly<Record<string, string>>;
}

export type CredentialFit = { readonly fits: true } | { readonly fits: false; readonly expected: string; readonly problem: string };

const HTTP_KIND_FOR = { bearer: 'http_bearer', basic: 'http_basic', header: 'http_header', query: 'http_query', aws_sigv4: 'aws_sigv4', oauth_client_credentials: 'oauth_client_credentials', oauth_refresh_token: 'oauth_refresh_token', github_app: 'github_app' } as const;
const HTTP_KINDS: readonly string[] = Object.values(HTTP_KIND_FOR);
const SSH_KINDS: readonly string[] = ['ssh_key', 'ssh_password'];

const FITS: CredentialFit = { fits: true };

function misfit(expected: string, problem: string): CredentialFit {
  return { fits: false, expected, problem };
}

export function credentialFit(use: CredentialUse, facts: CredentialFacts): CredentialFit {
  switch (use.kind) {
    case 'ssh':
      return SSH_KINDS.includes(facts.kind) ? FITS : misfit('ssh_key or ssh_password', `is of kind ${facts.kind}, but an SSH target needs an ssh_key or ssh_password`);
    case 'http': {
      const auth = use.auth;
      if (auth === undefined) return HTTP_KINDS.includes(facts.kind) ? FITS : misfit('an http_* kind', `is of kind ${facts.kind}, which cannot be used for HTTP`);
      const expected = HTTP_KIND_FOR[auth.kind];
      if (facts.kind !== expected) return misfit(expected, `is of kind ${facts.kind}, but the target's auth (${auth.kind}) needs ${expected}`);
      if (auth.kind === 'header' && headerKey(facts.fields['header'] ?? '') !== headerKey(auth.name)) {
        return misfit(`${expected} with header ${auth.name}`, `is sent in header ${facts.fields['header'] ?? '(none)'}, but the target declares auth: { header: ${auth.name} }`);
      }
      if (auth.kind === 'query' && facts.fields['param'] !== auth.name) {
        return misfit(`${expected} with parameter ${auth.name}`, `is sent as query parameter ${facts.fields['param'] ?? '(none)'}, but the target declares auth: { query: ${auth.name} }`);
      }
      return FITS;
    }
  }
}

/** The error for a credential that does not fit; `where` names the target when known. */
export function credentialMisfitError(facts: CredentialFacts, fit: Extract<CredentialFit, { fits: false }>, where?: string): PosternError {
  const at = where === undefined ? '' : ` (target ${where})`;
  return new PosternError('CREDENTIAL_KIND_MISMATCH', `the credential "${facts.name}"${at} ${fit.problem}`, {
    details: { credential: facts.name, kind: facts.kind, expected: fit.expected, ...(where === undefined ? {} : { target: where }) },
    sideEffectStarted: false,
  });
}

/** Throws CREDENTIAL_KIND_MISMATCH unless the credential fits. */
export function assertCredentialFits(use: CredentialUse, facts: CredentialFacts, where?: string): void {
  const fit = credentialFit(use, facts);
  if (!fit.fits) throw credentialMisfitError(facts, fit, where);
}
