/**
 * executeSsh: one catalog SSH command on a pinned host with a vault credential.
 *
 *   check options and credential (nothing sent) → connect, TCP_NODELAY →
 *   host key must equal the pin → authenticate → exec(action.command), no PTY
 *   → read stdout/stderr up to the caps → exit code / signal → close.
 *
 * Invariants:
 * - The host verifier accepts only the pinned SHA-256 fingerprint; an
 *   unpinned or changed key fails the handshake before authentication, so
 *   nothing runs (HOST_KEY_UNKNOWN / HOST_KEY_MISMATCH with fingerprints).
 * - No agent, no agent/X11/port forwarding, no PTY, no keyboard-interactive;
 *   the command line is `action.command` byte for byte.
 * - `side_effect_started` is false for every failure before the exec request
 *   is sent and true from then on (timeout, dropped connection, results).
 * - Timeout after exec: signal TERM, close the channel, TARGET_TIMEOUT.
 * - Error messages and details never contain key material or passwords.
 * - One connection per call (no pool yet); it is always ended on the way out.
 */
import ssh2 from 'ssh2';
import type { ClientChannel, ConnectConfig } from 'ssh2';
import type { ResolvedSsh } from '../../contracts/resolved.js';
import { PosternError } from '../../protocol/errors.js';
import { sshAuth } from './auth.js';
import { checkHostKey, hostKeyError, sshFingerprint } from './host-key.js';
import type { HostKeyVerdict } from './host-key.js';
import { CappedOutput } from './output.js';
import type { SshCredential, SshExecOptions, SshResult } from './types.js';
import { DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_SSH_CONNECT_TIMEOUT_MS, DEFAULT_SSH_TIMEOUT_MS } from './types.js';

/** How long a server gets to close the connection after our disconnect. */
const CLOSE_GRACE_MS = 2000;

interface Limits {
  readonly timeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly maxOutputBytes: number;
}

export async function executeSsh(action: ResolvedSsh, credential: SshCredential | null, opts: SshExecOptions = {}): Promise<SshResult> {
  const limits = checkedLimits(opts);
  if (action.command.includes('\0')) throw invalid('the command contains a NUL byte');
  const auth = sshAuth(credential, action.credential);
  return new Promise<SshResult>((resolve, reject) => {
    run(action, auth, limits, opts.onExecSent, resolve, reject);
  });
}

function run(
  action: ResolvedSsh,
  auth: ReturnType<typeof sshAuth>,
  limits: Limits,
  onExecSent: (() => void) | undefined,
  resolve: (r: SshResult) => void,
  reject: (e: PosternError) => void,
): void {
  const { host, port } = action;
  const where = { host, port };
  const client = new ssh2.Client();
  const stdout = new CappedOutput(limits.maxOutputBytes);
  const stderr = new CappedOutput(limits.maxOutputBytes);
  let verdict: HostKeyVerdict | null = null;
  let execSent = false;
  let channel: ClientChannel | null = null;
  let exit: { code: number | null; signal: string | null } | null = null;
  let settled = false;

  const finish = (outcome: { result: SshResult } | { error: PosternError }): void => {
    if (settled) return;
    settled = true;
    clearTimeout(deadline);
    if (channel !== null) {
      try {
        channel.close();
      } catch {
        // the channel is already gone
      }
    }
    client.end();
    // A server that ignores the disconnect must not keep the socket open.
    setTimeout(() => client.destroy(), CLOSE_GRACE_MS).unref();
    if ('result' in outcome) resolve(outcome.result);
    else reject(outcome.error);
  };

  const result = (): SshResult => ({
    exit_code: exit?.code ?? null,
    signal: exit?.signal ?? null,
    stdout: stdout.text(),
    stderr: stderr.text(),
    stdout_truncated: stdout.truncated,
    stderr_truncated: stderr.truncated,
    host_key_fingerprint: verdict?.offered ?? '',
    side_effect_started: true,
  });

  const deadline = setTimeout(() => {
    if (channel !== null) {
      try {
        channel.signal('TERM');
      } catch {
        // the signal is best effort; closing the channel follows
      }
    }
    finish({
      error: new PosternError('TARGET_TIMEOUT', `the SSH command on ${host}:${port} did not finish within ${limits.timeoutMs} ms`, {
        details: { ...where, timeout_ms: limits.timeoutMs, phase: execSent ? 'command' : 'connect' },
        sideEffectStarted: execSent,
      }),
    });
  }, limits.timeoutMs);

  client.on('connect', () => client.setNoDelay(true));

  client.on('error', (err: Error & { level?: string }) => {
    if (verdict !== null && verdict.kind !== 'ok') {
      finish({ error: hostKeyError(verdict, host, port) });
      return;
    }
    finish({ error: connectionError(err, where, execSent, limits) });
  });

  client.on('close', () => {
    // Reached only when the connection ends before the call settled.
    finish({
      error: new PosternError('TARGET_ERROR', `the SSH connection to ${host}:${port} closed ${execSent ? 'before the command finished' : 'before the command was sent'}`, {
        details: { ...where, reason: 'connection_closed' },
        sideEffectStarted: execSent,
      }),
    });
  });

  client.on('ready', () => {
    execSent = true;
    notify(onExecSent);
    client.exec(action.command, {}, (err, stream: ClientChannel | undefined) => {
      if (settled) {
        // The connection may already be gone: then there is an error and no channel.
        stream?.close();
        return;
      }
      if (err || stream === undefined) {
        finish({
          error: new PosternError('TARGET_ERROR', `the SSH server on ${host}:${port} refused the command channel`, {
            details: { ...where, reason: 'exec_refused' },
            sideEffectStarted: true,
            cause: err,
          }),
        });
        return;
      }
      channel = stream;
      const bothCapped = (): void => {
        if (stdout.truncated && stderr.truncated) finish({ result: result() });
      };
      stream.on('data', (chunk: Buffer) => {
        stdout.add(chunk);
        bothCapped();
      });
      stream.stderr.on('data', (chunk: Buffer) => {
        stderr.add(chunk);
        bothCapped();
      });
      stream.on('exit', (code: number | null, signal?: string) => {
        exit = { code: typeof code === 'number' ? code : null, signal: typeof signal === 'string' ? signal : null };
      });
      stream.on('close', () => finish({ result: result() }));
    });
  });

  const config: ConnectConfig = {
    host,
    port,
    username: action.user,
    ...auth,
    hostVerifier: (key: Buffer): boolean => {
      verdict = checkHostKey(action.hostKey, sshFingerprint(key));
      return verdict.kind === 'ok';
    },
    readyTimeout: Math.min(limits.connectTimeoutMs, limits.timeoutMs),
    tryKeyboard: false,
    agentForward: false,
    keepaliveInterval: 0,
  };
  try {
    client.connect(config);
  } catch (e) {
    finish({ error: connectionError(e instanceof Error ? e : new Error('connect failed'), where, false, limits) });
  }
}

/** Maps an ssh2 failure to a PosternError without quoting anything secret. */
function connectionError(
  err: Error & { level?: string; code?: string },
  where: { host: string; port: number },
  execSent: boolean,
  limits: Limits,
): PosternError {
  const at = `${where.host}:${where.port}`;
  if (!execSent && err.level === 'client-timeout') {
    return new PosternError('TARGET_TIMEOUT', `the SSH handshake with ${at} did not finish within ${Math.min(limits.connectTimeoutMs, limits.timeoutMs)} ms`, {
      details: { ...where, phase: 'connect' },
      sideEffectStarted: false,
      cause: err,
    });
  }
  if (!execSent && err.level === 'client-authentication') {
    return new PosternError('TARGET_ERROR', `the SSH server on ${at} rejected the credential`, {
      details: { ...where, reason: 'auth_failed' },
      sideEffectStarted: false,
      cause: err,
    });
  }
  const reason = err.level === 'client-socket' && typeof err.code === 'string' ? err.code : (err.level ?? 'ssh_error');
  return new PosternError('TARGET_ERROR', execSent ? `the SSH connection to ${at} failed during the command` : `could not connect to the SSH server on ${at}`, {
    details: { ...where, reason },
    sideEffectStarted: execSent,
    cause: err,
  });
}

function invalid(message: string): PosternError {
  return new PosternError('INPUT_INVALID', message, { sideEffectStarted: false });
}

function checkedLimits(opts: SshExecOptions): Limits {
  const limits: Limits = {
    timeoutMs: opts.timeoutMs ?? DEFAULT_SSH_TIMEOUT_MS,
    connectTimeoutMs: opts.connectTimeoutMs ?? DEFAULT_SSH_CONNECT_TIMEOUT_MS,
    maxOutputBytes: opts.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
  };
  for (const [name, n] of Object.entries(limits)) {
    if (!Number.isSafeInteger(n) || n < 1) throw invalid(`${name} must be a positive integer`);
  }
  return limits;
}

/** The daemon's hook must not break the call it is told about. */
function notify(hook: (() => void) | undefined): void {
  try {
    hook?.();
  } catch {
    // ignored: the daemon learns the outcome from the result
  }
}
