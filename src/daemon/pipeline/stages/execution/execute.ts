/**
 * Execution: hands the resolved action to its executor with the vault
 * credential. The credential is looked up by the name the catalog gave and
 * must fit the target's auth (one rule, src/rules/credential-fit.ts, also
 * run when the catalog is accepted and loaded); nothing here decides policy.
 */
import type { ResolvedAction, ResolvedHttp } from '../../../../contracts/index.js';
import { executeHttp, type HttpPool, type HttpRequestSpec } from '../../../../executors/http/index.js';
import { headerKey } from '../../../../rules/http-headers.js';
import type { SshRunner } from '../../../../executors/ssh/index.js';
import type { ExecResult } from '../call-state.js';
import type { Credential } from '../../../../vault/index.js';
import type { DaemonConfig } from '../../../services/config.js';
import { isMintingAuth, mintToken } from '../../../../executors/http/token-endpoint.js';
import type { MintedTokens } from '../../../services/minted-tokens.js';



/** Headers the executor sets itself; the resolved action lists them so the approval card shows them. */
const EXECUTOR_SET = new Set(['idempotency-key', 'content-type']);

/** The executor's request spec for a resolved HTTP action (exported so tests can prove the catalog and the executor agree). */
export function httpSpec(a: ResolvedHttp): HttpRequestSpec {
  const contentType = a.headers.find(([n]) => headerKey(n) === 'content-type')?.[1] ?? 'application/json';
  return {
    origin: a.origin,
    method: a.method,
    path: a.path,
    query: a.query,
    headers: a.headers.filter(([n]) => !EXECUTOR_SET.has(headerKey(n))),
    ...(a.bodyText === undefined ? {} : { body: { contentType, bytes: Buffer.from(a.bodyText, 'utf8') } }),
  };
}

interface ExecOptions {
  readonly config: DaemonConfig;
  readonly allowPrivate: boolean;
  readonly ssh: SshRunner;
  /** Kept-alive connections, or null: a connection per call. */
  readonly http: HttpPool | null;
  readonly signal: AbortSignal;
  readonly onRequestSent: () => void;
  /** How far past each output cap to read, so redaction sees a secret straddling the cut whole (Redactor.readPastCapBytes). */
  readonly readPastCapBytes: number;
  /** Wall time (the daemon's clock), for request signatures. */
  readonly now: () => Date;
  /** The daemon's minted-token cache, for credentials exchanged for a short-lived token (OAuth, GitHub App). */
  readonly tokens: MintedTokens;
  /** Saves a refresh token the server rotated (before the call goes on). */
  readonly keepRefreshToken: (credential: Credential, next: Uint8Array) => Promise<void>;
}

/** The call's copy of a minting credential with its access token added (the caller zeroes it). */
async function withMintedToken(action: ResolvedHttp, cred: Credential, opts: ExecOptions): Promise<Credential> {
  const auth = action.auth;
  if (!isMintingAuth(auth)) return cred;
  const tokens = opts.tokens;
  const token = await tokens.token({
    name: cred.meta.name,
    version: tokens.versionOf(cred, auth),
    mint: async (learn) => {
      const minted = await mintToken(cred, auth, {
        learn,
        allowPrivate: opts.allowPrivate,
        timeouts: { connectMs: opts.config.http.connect_timeout_ms, headersMs: opts.config.http.headers_timeout_ms, bodyMs: opts.config.http.body_timeout_ms },
        now: opts.now,
      });
      // Kept: the newest refresh token; none returned keeps the old one (nothing to write).
      if (minted.refreshToken !== undefined) {
        await opts.keepRefreshToken(cred, minted.refreshToken);
        minted.refreshToken.fill(0);
      }
      return minted;
    },
  });
  return { meta: cred.meta, secret: { ...cred.secret, access_token: token } };
}

export async function executeAction(action: ResolvedAction, cred: Credential, opts: ExecOptions): Promise<ExecResult> {
  switch (action.kind) {
    case 'http': {
      const key = action.headers.find(([n]) => n === 'idempotency-key')?.[1];
      const credential = await withMintedToken(action, cred, opts);
      try {
        const result = await executeHttp(httpSpec(action), {
          credential,
          allowPrivate: opts.allowPrivate,
          ...(key === undefined ? {} : { idempotencyKey: { header: 'Idempotency-Key', value: key } }),
          timeouts: {
            connectMs: opts.config.http.connect_timeout_ms,
            headersMs: opts.config.http.headers_timeout_ms,
            bodyMs: opts.config.http.body_timeout_ms,
          },
          maxResponseBytes: opts.config.http.max_response_bytes,
          readPastCapBytes: opts.readPastCapBytes,
          signal: opts.signal,
          onRequestSent: opts.onRequestSent,
          ...(opts.http === null ? {} : { pool: opts.http }),
          auth: action.auth,
          now: opts.now,
        });
        return { kind: 'http', result };
      } finally {
        if (credential !== cred) credential.secret['access_token']?.fill(0);
      }
    }
    case 'ssh': {
      const result = await opts.ssh.exec(action, cred, {
        timeoutMs: opts.config.ssh.timeout_ms,
        connectTimeoutMs: opts.config.ssh.connect_timeout_ms,
        maxOutputBytes: opts.config.ssh.max_output_bytes,
        readPastCapBytes: opts.readPastCapBytes,
        signal: opts.signal,
        onExecSent: opts.onRequestSent,
      });
      return { kind: 'ssh', result };
    }
  }
}
