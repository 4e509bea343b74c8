/**
 * The vault's public types: credential kinds, their metadata and their secret
 * parts. Secret parts are byte arrays so they can be zeroed when the vault
 * locks; metadata never holds secret material and may be shown to anyone.
 */

export const CredentialKinds = {
  http_bearer: { label: 'HTTP bearer token', secretParts: ['token'] },
  http_basic: { label: 'HTTP basic auth (username in metadata)', secretParts: ['password'] },
  http_header: { label: 'HTTP custom header (header name in metadata)', secretParts: ['value'] },
  http_query: { label: 'HTTP query parameter (parameter name in metadata)', secretParts: ['value'] },
  ssh_key: { label: 'SSH private key (ed25519, ecdsa or rsa; optional key passphrase)', secretParts: ['private_key', 'key_passphrase'] },
  ssh_password: { label: 'SSH password', secretParts: ['password'] },
} as const;

export type CredentialKind = keyof typeof CredentialKinds;

export function isCredentialKind(s: string): s is CredentialKind {
  return Object.hasOwn(CredentialKinds, s);
}

/** Non-secret facts about a credential. */
export interface CredentialMeta {
  readonly name: string;
  readonly kind: CredentialKind;
  /** ISO-8601 timestamps. */
  readonly created_at: string;
  readonly rotated_at: string | null;
  readonly last_used_at: string | null;
  /**
   * Kind-specific public fields: `username` (http_basic), `header` (http_header),
   * `param` (http_query), `key_type` and `public_fingerprint` (ssh_key).
   */
  readonly fields: Readonly<Record<string, string>>;
}

/** A credential with its secret parts (names from CredentialKinds[kind].secretParts). */
export interface Credential {
  readonly meta: CredentialMeta;
  readonly secret: Readonly<Record<string, Uint8Array>>;
}

/** Argon2id cost parameters as stored in the vault header. */
export interface KdfParams {
  readonly opslimit: number;
  /** bytes */
  readonly memlimit: number;
}

/** Purposes for keys derived from the vault's data key (never the data key itself). */
export type DerivedKeyPurpose = 'catalog-mac' | 'operator-auth';
