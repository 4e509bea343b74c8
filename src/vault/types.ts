/**
 * The vault's public types: credential kinds, their metadata and their secret
 * parts. Secret parts are byte arrays so they can be zeroed when the vault
 * locks; metadata never holds secret material and may be shown to anyone.
 * For each kind: `secretParts` lists every part name it may hold,
 * `optionalSecretParts` the ones that may be absent, and `requiredFields` the
 * public fields the executors need (the vault enforces all three on add/rotate).
 */

export const CredentialKinds = {
  http_bearer: { label: 'HTTP bearer token', secretParts: ['token'], optionalSecretParts: [], requiredFields: [] },
  http_basic: { label: 'HTTP basic auth (username in metadata)', secretParts: ['password'], optionalSecretParts: [], requiredFields: ['username'] },
  http_header: { label: 'HTTP custom header (header name in metadata)', secretParts: ['value'], optionalSecretParts: [], requiredFields: ['header'] },
  http_query: { label: 'HTTP query parameter (parameter name in metadata)', secretParts: ['value'], optionalSecretParts: [], requiredFields: ['param'] },
  aws_sigv4: {
    label: 'AWS Signature Version 4 (access key id in metadata; optional session token)',
    secretParts: ['secret_access_key', 'session_token'],
    optionalSecretParts: ['session_token'],
    requiredFields: ['access_key_id'],
  },
  oauth_client_credentials: {
    label: 'OAuth 2.0 client credentials (client id in metadata; token endpoint and scopes in the target)',
    secretParts: ['client_secret'],
    optionalSecretParts: [],
    requiredFields: ['client_id'],
  },
  oauth_refresh_token: {
    label: 'OAuth 2.0 refresh token (client id in metadata; optional client secret; token endpoint and scopes in the target)',
    secretParts: ['refresh_token', 'client_secret'],
    optionalSecretParts: ['client_secret'],
    requiredFields: ['client_id'],
  },
  github_app: {
    label: 'GitHub App (app id and installation id in metadata; private key PEM)',
    secretParts: ['private_key'],
    optionalSecretParts: [],
    requiredFields: ['app_id', 'installation_id'],
  },
  ssh_key: {
    label: 'SSH private key (ed25519, ecdsa or rsa; optional key passphrase)',
    secretParts: ['private_key', 'key_passphrase'],
    optionalSecretParts: ['key_passphrase'],
    requiredFields: [],
  },
  ssh_password: { label: 'SSH password', secretParts: ['password'], optionalSecretParts: [], requiredFields: [] },
  /** Made by `postern approvals page enable --bind ADDR` (never added by hand): the approval page's TLS key, its certificate (DER, base64) in metadata. */
  tls_key: { label: "the approval page's TLS key (its certificate in metadata)", secretParts: ['private_key'], optionalSecretParts: [], requiredFields: ['certificate'] },
  postgres_url: { label: 'PostgreSQL connection string for journal shipping (postgres://…; never usable by a tool)', secretParts: ['url'], optionalSecretParts: [], requiredFields: [] },
} as const satisfies Record<
  string,
  { label: string; secretParts: readonly string[]; optionalSecretParts: readonly string[]; requiredFields: readonly string[] }
>;

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
   * `param` (http_query), `access_key_id` (aws_sigv4), `client_id` (oauth_client_credentials),
   * `app_id` and `installation_id` (github_app), `key_type` and `public_fingerprint` (ssh_key).
   */
  readonly fields: Readonly<Record<string, string>>;
}

/** A credential with its secret parts (names from CredentialKinds[kind].secretParts). */
export interface Credential {
  readonly meta: CredentialMeta;
  readonly secret: Readonly<Record<string, Uint8Array>>;
}

/**
 * Why a value is remembered: `retired` — a credential's value replaced by a
 * rotate (the operator's or a server's) or removed; `minted` — a token made
 * from a credential (an OAuth access token, a GitHub App JWT or installation
 * token), kept under the part `access_token`.
 */
export type RememberedSource = 'retired' | 'minted';

/**
 * A value the redactor must still recognize, though no credential holds it
 * any more: public facts only. It matters until `until` when that is known (a
 * minted token's expiry), else for the vault's retention after `since`.
 */
export interface RememberedMeta {
  readonly name: string;
  readonly kind: CredentialKind;
  readonly source: RememberedSource;
  /** ISO-8601: when it was retired or minted. */
  readonly since: string;
  /** ISO-8601: when it stops mattering, or null (then `since` + the retention). */
  readonly until: string | null;
  readonly fields: Readonly<Record<string, string>>;
}

/** How long a retired value is remembered when the operator never set it (FORMAT.md §4, `retention_days`). */
export const DEFAULT_RETENTION_DAYS = 30;
export const MAX_RETENTION_DAYS = 3650;

/** A remembered value with its secret parts. */
export interface RememberedValue {
  readonly meta: RememberedMeta;
  readonly secret: Readonly<Record<string, Uint8Array>>;
}

/**
 * The journal a home keeps, as the vault last recorded it (FORMAT.md §4,
 * `journal`): its id and the heads its anchor vouched for at that save. A
 * home whose vault names a journal has one: losing the journal, its anchor
 * and its checkpoints together is refused, never taken for a new home.
 */
export interface JournalMark {
  readonly id: string;
  readonly activity: { readonly seq: number; readonly hash: string };
  readonly sessions: { readonly seq: number; readonly hash: string };
  /** The checkpoint file at that save (journal/checkpoint/vault-mark.ts); absent or null: not recorded. */
  readonly checkpoints?: { readonly count: number; readonly counter: number; readonly digest: string } | null;
}

/**
 * What the operator's restores decided about keys lost with a journal (FORMAT.md
 * §4, `journal_gap`; journal/gap.ts `GapRecord`): the keys held, the keys
 * released while part of a gap was unread, and whether part was unread. Kept
 * here because the journal that journaled it is the one a later restore
 * replaces.
 */
export interface JournalGapMark {
  readonly held: readonly { readonly tool: string; readonly key: string }[];
  readonly released: readonly { readonly tool: string; readonly key: string }[];
  readonly unread: boolean;
}

/** Argon2id cost parameters as stored in the vault header. */
export interface KdfParams {
  readonly opslimit: number;
  /** bytes */
  readonly memlimit: number;
}

/** Purposes for keys derived from the vault's data key (never the data key itself). */
export type DerivedKeyPurpose = 'catalog-mac' | 'operator-auth' | 'journal-anchor' | 'secret-exposure' | 'journal-checkpoint' | 'pending-secret';
