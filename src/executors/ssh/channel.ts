/**
 * runCommand: one exec channel on an open SshConnection.
 *
 *   open a session channel → exec(command), no PTY → read stdout/stderr up
 *   to the caps → exit code / signal → channel closed.
 *
 * Invariants:
 * - The command line is `command` byte for byte.
 * - `onExecSent` runs once, right before the exec request is written;
 *   `side_effect_started` is false for every failure before that and true
 *   from then on. A call that stops before it (deadline, cancel, refused
 *   channel, connection lost) sent nothing.
 * - Stopped after exec (deadline, cancel, pool shutdown): signal TERM, close
 *   the channel; the connection stays usable.
 * - Each stream keeps at most the cap plus `readPastCapBytes` (for
 *   redaction, see SshResult); once both are full the channel is closed
 *   early and the result returned with `exit_code` null.
 * - `released` settles once this call holds no channel any more (or
 *   CLOSE_GRACE_MS after it settled, if the server never confirms the close).
 */
import type { ClientChannel } from 'ssh2';
import { PosternError } from '../../rules/errors.js';
import type { CallStop, Limits } from './call.js';
import { notify } from './call.js';
import { CLOSE_GRACE_MS, errorReason } from './connection.js';
import type { SshConnection } from './connection.js';
import { CappedOutput } from './output.js';
import type { SshResult } from './types.js';

export interface CommandRun {
  readonly result: Promise<SshResult>;
  readonly released: Promise<void>;
}

type Outcome = { readonly result: SshResult } | { readonly error: PosternError };

export function runCommand(
  conn: SshConnection,
  command: string,
  output: Pick<Limits, 'maxOutputBytes' | 'readPastCapBytes'>,
  stop: CallStop,
  onExecSent: (() => void) | undefined,
): CommandRun {
  let isReleased = false;
  let resolveReleased: () => void = () => undefined;
  const released = new Promise<void>((resolve) => (resolveReleased = resolve));
  const release = (): void => {
    isReleased = true;
    resolveReleased();
  };
  const result = new Promise<SshResult>((resolve, reject) => {
    const stdout = new CappedOutput(output.maxOutputBytes, output.readPastCapBytes);
    const stderr = new CappedOutput(output.maxOutputBytes, output.readPastCapBytes);
    let requested = false;
    let execSent = false;
    let channel: ClientChannel | null = null;
    let exit: { code: number | null; signal: string | null } | null = null;
    let settled = false;
    let unwatch: () => void = () => undefined;

    const finish = (outcome: Outcome): void => {
      if (settled) return;
      settled = true;
      stop.signal.removeEventListener('abort', onStop);
      unwatch();
      if (channel !== null) closeQuietly(channel);
      if (!requested) release();
      else if (!isReleased) setTimeout(release, CLOSE_GRACE_MS).unref();
      if ('result' in outcome) resolve(outcome.result);
      else reject(outcome.error);
    };

    const onStop = (): void => {
      if (channel !== null) signalQuietly(channel);
      finish({ error: stop.error(execSent ? 'command' : 'channel') });
    };

    const snapshot = (): SshResult => ({
      exit_code: exit?.code ?? null,
      signal: exit?.signal ?? null,
      stdout: stdout.text(),
      stderr: stderr.text(),
      stdout_truncated: stdout.truncated,
      stderr_truncated: stderr.truncated,
      stdout_truncated_at: stdout.truncatedAt(),
      stderr_truncated_at: stderr.truncatedAt(),
      host_key_fingerprint: conn.fingerprint,
      side_effect_started: true,
    });

    const attach = (stream: ClientChannel): void => {
      channel = stream;
      const bothCapped = (): void => {
        if (stdout.saturated && stderr.saturated) finish({ result: snapshot() });
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
        // ssh2 prefixes the protocol's signal name ("TERM" → "SIGTERM"); report the protocol's.
        exit = { code: typeof code === 'number' ? code : null, signal: typeof signal === 'string' ? signal.replace(/^SIG/, '') : null };
      });
      stream.on('close', () => finish({ result: snapshot() }));
    };

    if (stop.signal.aborted) {
      onStop();
      return;
    }
    stop.signal.addEventListener('abort', onStop, { once: true });
    unwatch = conn.onLost((err) => finish({ error: lostError(conn, err, execSent) }));
    if (settled) return;
    try {
      conn.exec(
        command,
        () => {
          execSent = true;
          notify(onExecSent);
        },
        (err, stream) => {
          if (stream === undefined || err !== undefined) {
            release();
            finish({ error: conn.lost ? lostError(conn, null, execSent) : refusedError(conn, err, execSent) });
            return;
          }
          stream.once('close', release);
          if (settled) {
            // Stopped while the exec reply was on its way: the command may be running.
            signalQuietly(stream);
            closeQuietly(stream);
            return;
          }
          attach(stream);
        },
      );
      requested = true;
    } catch {
      finish({ error: lostError(conn, null, false) });
    }
  });
  return { result, released };
}

function lostError(conn: SshConnection, err: (Error & { level?: string }) | null, execSent: boolean): PosternError {
  const at = `${conn.where.host}:${conn.where.port}`;
  const when = execSent ? 'before the command finished' : 'before the command was sent';
  return new PosternError('TARGET_ERROR', err === null ? `the SSH connection to ${at} closed ${when}` : `the SSH connection to ${at} failed ${when}`, {
    details: { ...conn.where, reason: err === null ? 'connection_closed' : errorReason(err) },
    sideEffectStarted: execSent,
    cause: err ?? undefined,
  });
}

function refusedError(conn: SshConnection, err: Error | undefined, execSent: boolean): PosternError {
  const at = `${conn.where.host}:${conn.where.port}`;
  return new PosternError('TARGET_ERROR', execSent ? `the SSH server on ${at} refused the command` : `the SSH server on ${at} refused the session channel`, {
    details: { ...conn.where, reason: execSent ? 'exec_refused' : 'channel_refused' },
    sideEffectStarted: execSent,
    cause: err,
  });
}

function signalQuietly(channel: ClientChannel): void {
  try {
    channel.signal('TERM');
  } catch {
    // the signal is best effort; closing the channel follows
  }
}

function closeQuietly(channel: ClientChannel): void {
  try {
    channel.close();
  } catch {
    // the channel is already gone
  }
}
