/**
 * The SSH executor's public shapes: the credential that goes in (a vault
 * Credential fits), the options, and the result that comes back.
 *
 * Invariants: nothing that comes out (result, error message, details) carries
 * secret material; `SshCredential.secret` goes in and never comes out. The
 * result is not redacted here — the remote may print anything, and the daemon
 * runs every result through src/redaction.
 */
import type { ResolvedSsh } from '../../contracts/calls/resolved.js';
import type { CredentialKind } from '../../vault/types.js';

/** The parts of a vault Credential the executor needs (kinds `ssh_key` and `ssh_password`). */
export interface SshCredential {
  readonly meta: { readonly name: string; readonly kind: CredentialKind; readonly fields: Readonly<Record<string, string>> };
  readonly secret: Readonly<Record<string, Uint8Array>>;
}

export interface SshExecOptions {
  /** Whole-call deadline in ms, from the start of the call (default 60 s). */
  readonly timeoutMs?: number;
  /** Limit for TCP connect + SSH handshake + authentication (default 10 s, never above timeoutMs). */
  readonly connectTimeoutMs?: number;
  /** Cap in bytes for stdout and for stderr, each (default 1 MiB). */
  readonly maxOutputBytes?: number;
  /**
   * Bytes to keep past each cap (default 0), after `*_truncated_at`, so that
   * redaction sees a secret straddling the cut whole: the daemon passes
   * Redactor.readPastCapBytes.
   */
  readonly readPastCapBytes?: number;
  /**
   * Called once, just before the exec request is sent: from here on
   * `side_effect_started` is true.
   */
  readonly onExecSent?: () => void;
}

export interface SshPoolOptions {
  /** Close a connection after this long without an open channel (default 60 s). */
  readonly idleMs?: number;
  /** Concurrent exec channels per connection (default 4); further calls wait their turn, on their own deadline. */
  readonly maxChannelsPerConnection?: number;
}

export type SshPoolExecOptions = SshExecOptions & {
  /** Cancels the call: nothing is sent if it has not been yet, else the command gets TERM (CALL_CANCELLED). */
  readonly signal?: AbortSignal;
};

export interface SshResult {
  /** The remote exit status; null when the command died by a signal or was cut off. */
  readonly exit_code: number | null;
  /** Signal name as the server reports it (e.g. `TERM`), or null. */
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly stdout_truncated: boolean;
  readonly stderr_truncated: boolean;
  /**
   * When truncated: how many characters of `stdout` / `stderr` fall within
   * the cap; the rest was kept past the cap for redaction only and must be
   * dropped after redacting (Redactor.redactCut). Null otherwise.
   */
  readonly stdout_truncated_at: number | null;
  readonly stderr_truncated_at: number | null;
  /** `SHA256:…` of the host key the server presented (equal to the pinned one). */
  readonly host_key_fingerprint: string;
  readonly side_effect_started: true;
}

export const DEFAULT_SSH_TIMEOUT_MS = 60_000;
export const DEFAULT_SSH_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
export const DEFAULT_SSH_IDLE_MS = 60_000;
export const DEFAULT_SSH_CHANNELS_PER_CONNECTION = 4;

/** Runs SSH commands: what the call pipeline asks of the daemon's connection pool. */
export interface SshRunner {
  exec(action: ResolvedSsh, credential: SshCredential | null, opts?: SshExecOptions & { readonly signal?: AbortSignal }): Promise<SshResult>;
}
