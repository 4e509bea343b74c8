/**
 * The HTTP executor's public shapes: what the daemon hands in (a fully
 * resolved request on a fixed origin, plus the credential to inject) and what
 * comes back. Nothing here carries a secret except `HttpCredential.secret`,
 * which goes in and never comes out: `HttpResult.url` shows a query
 * credential as a redaction marker, and errors never quote header values.
 */
import type { CredentialKind } from '../../vault/types.js';
import type { Dispatcher } from 'undici';
import type { AuthPlacement } from '../../rules/credential-fit.js';

export interface HttpRequestSpec {
  /** Normalized origin, e.g. `https://api.example.com:8443`; no path, query or userinfo. */
  readonly origin: string;
  readonly method: string;
  /** Already percent-encoded; starts with `/`; no query, fragment or dot segments. */
  readonly path: string;
  /** Unencoded name/value pairs, encoded here (encodeURIComponent). */
  readonly query: readonly (readonly [string, string])[];
  /** Agent/catalog headers, without the credential. */
  readonly headers: readonly (readonly [string, string])[];
  readonly body?: { readonly contentType: string; readonly bytes: Uint8Array };
}

/** The parts of a vault Credential the executor needs (a vault Credential fits). */
export interface HttpCredential {
  readonly meta: { readonly name: string; readonly kind: CredentialKind; readonly fields: Readonly<Record<string, string>> };
  readonly secret: Readonly<Record<string, Uint8Array>>;
  /** Stands for exactly these bytes, so the pool digests them once (DigestibleCredential.source). */
  readonly source?: object;
}

/** Enforced with undici's timers: above a second they fire within about a second of the limit. */
export interface HttpTimeouts {
  /** Applies to DNS resolution, then again to TCP connect plus TLS handshake. */
  readonly connectMs: number;
  /** From the request being written to the end of the response headers. */
  readonly headersMs: number;
  /** Longest pause between two chunks of the response body. */
  readonly bodyMs: number;
}

/** Resolves a host name to IP addresses (injectable for tests). */
export type ResolveHost = (host: string) => Promise<readonly string[]>;

export interface HttpExecOptions {
  /** The credential to inject; `null` for a target that takes none. */
  readonly credential: HttpCredential | null;
  /** The catalog marks the target as local: loopback/private/link-local addresses are allowed. */
  readonly allowPrivate: boolean;
  readonly idempotencyKey?: { readonly header: string; readonly value: string };
  readonly timeouts?: Partial<HttpTimeouts>;
  /** Response body cap in bytes (default 1 MiB); the body is truncated there (counted after decoding). */
  readonly maxResponseBytes?: number;
  /**
   * Bytes to read past the cap (default 0) and leave in a truncated body,
   * after `truncated_at`, so that redaction sees a secret straddling the cut
   * whole: the daemon passes Redactor.readPastCapBytes.
   */
  readonly readPastCapBytes?: number;
  readonly signal?: AbortSignal;
  readonly resolve?: ResolveHost;
  /**
   * Called once, when a connection to a checked address is up and the
   * request is about to be written: from here on `side_effect_started` is true.
   */
  readonly onRequestSent?: () => void;
  /** Kept-alive connections to reuse (the daemon's HttpPool); without it the call opens and closes its own. */
  readonly pool?: HttpDispatchers;
  /** The target's `auth` (region and service for aws_sigv4); without it only the credential's kind decides. */
  readonly auth?: AuthPlacement;
  /** Wall time, for a signature's date (the daemon's clock). */
  readonly now?: () => Date;
}

/** Where a call connects: the checked address for the origin's host (what the pinned connector needs). */
export interface CheckedConnection {
  readonly protocol: 'http:' | 'https:';
  /** The origin's host: used for SNI, the certificate check and messages. */
  readonly host: string;
  /** The checked address to connect to. */
  readonly address: string;
  readonly port: number;
  readonly allowPrivate: boolean;
  /** TCP connect plus TLS handshake. */
  readonly connectTimeoutMs: number;
}

/** A source of kept-alive dispatchers, one per target key (pool.ts). */
export interface HttpDispatchers {
  dispatcher(target: { readonly origin: string; readonly connector: CheckedConnection; readonly credential: HttpCredential | null }): Dispatcher;
}

export type HttpBody =
  | { readonly kind: 'json'; readonly value: unknown }
  | { readonly kind: 'text'; readonly value: string }
  | { readonly kind: 'base64'; readonly value: string }
  /** The body was not returned (a coding that could not be decoded and inspected); `value` says why. */
  | { readonly kind: 'withheld'; readonly value: string };

export interface HttpResult {
  readonly status: number;
  /** A safe subset of the response headers, lower-case names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: HttpBody;
  /** The body was cut at the response cap. */
  readonly truncated: boolean;
  /**
   * When truncated: how many characters of `body.value` fall within the cap.
   * The characters after it were read past the cap for redaction only and
   * must be dropped after redacting (Redactor.redactCut); null otherwise.
   */
  readonly truncated_at: number | null;
  /** The codings the target applied that were undone (e.g. "gzip"), or null. */
  readonly decoded_from: string | null;
  /**
   * A binary body that is itself a gzip file (`application/gzip`, or any
   * type): its contents, decoded under the cap, as Latin-1 text, for the
   * daemon to inspect — `complete` false when they did not decode whole
   * within the cap. Null for any other body. Never returned to the agent.
   */
  readonly embedded: { readonly text: string; readonly complete: boolean } | null;
  readonly connected_ip: string;
  /** The request URL with any query credential replaced by a redaction marker. */
  readonly url: string;
  readonly side_effect_started: true;
}

export const DEFAULT_TIMEOUTS: HttpTimeouts = { connectMs: 10_000, headersMs: 30_000, bodyMs: 30_000 };
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
