/**
 * The relay: the real connection to the destination (the SSH executor's
 * SshConnection: TCP_NODELAY, the pinned host key checked before
 * authentication, the vault's key in memory only, no agent or forwarding),
 * one exec channel with exactly the planned command, and the agent's channel
 * joined to it — its stdin to the destination, the destination's output and
 * exit status back.
 *
 * What goes back to the agent is redacted where it is text: stderr always,
 * and stdout of exact commands, each collected (capped) and redacted as a
 * whole when the command ends, so no form of a vault secret reaches the
 * agent's terminal, cut or whole. The stdout of git's pack protocol is
 * relayed as it comes (binary; a rewritten byte would corrupt the transfer).
 *
 * Invariants: nothing is sent before the stage runs (the intent is journaled
 * by then); `onExecSent` marks the effect started right before the exec
 * request leaves; a destination lost or an agent gone mid-way is an error
 * after the effect started (the journal says outcome unknown); the
 * connection is always ended.
 */
import type { ClientChannel } from 'ssh2';
import type { ResolvedSsh } from '../../contracts/index.js';
import { sshAuth } from '../../executors/ssh/auth.js';
import { SshConnection } from '../../executors/ssh/connection.js';
import { CappedOutput } from '../../executors/ssh/output.js';
import type { SshCredential, SshResult } from '../../executors/ssh/index.js';
import type { Redactor } from '../../redaction/index.js';
import { PosternError } from '../../rules/errors.js';
import { failedExecution } from '../pipeline/stages/execution/index.js';
import { need } from '../pipeline/stages/call-state.js';
import { next, refuse, type Stage } from '../pipeline/stages/step.js';

/** The agent's side of one exec request (an ssh2 server channel fits). */
export interface AgentChannel extends NodeJS.ReadableStream {
  write(data: Buffer | string): boolean;
  readonly stderr: { write(data: Buffer | string): boolean };
  on(event: 'close', listener: () => void): this;
  on(event: string, listener: (...args: unknown[]) => void): this;
}

interface RelayOptions {
  readonly connectTimeoutMs: number;
  readonly maxOutputBytes: number;
  readonly readPastCapBytes: number;
  /** Git's pack protocol: stdout passes through unredacted. */
  readonly rawStdout: boolean;
  readonly redactor: () => Redactor;
  readonly onExecSent: () => void;
  /** Relay ended: the exit status to give the agent. */
  readonly onExit: (exit: { code: number | null; signal: string | null }) => void;
}

function openExec(conn: SshConnection, command: string, onSent: () => void): Promise<ClientChannel> {
  return new Promise((resolve, reject) => {
    conn.exec(command, onSent, (err, ch) => {
      if (err !== undefined || ch === undefined) {
        reject(new PosternError('TARGET_ERROR', `the SSH server on ${conn.where.host}:${conn.where.port} refused the command's channel`, { details: { ...conn.where, reason: 'channel_refused' }, sideEffectStarted: false }));
      } else resolve(ch);
    });
  });
}

function redacted(out: CappedOutput, r: Redactor): string {
  const cut = out.truncatedAt();
  return cut === null ? r.redactText(out.text()) : r.redactCut(out.text(), cut);
}

function joinChannels(agent: AgentChannel, dest: ClientChannel, conn: SshConnection, o: RelayOptions, fingerprint: string): Promise<SshResult> {
  const stdout = new CappedOutput(o.maxOutputBytes, o.readPastCapBytes);
  const stderr = new CappedOutput(o.maxOutputBytes, o.readPastCapBytes);
  let code: number | null = null;
  let signal: string | null = null;
  return new Promise<SshResult>((resolve, reject) => {
    let done = false;
    const fail = (why: string, reason: string): void => {
      if (done) return;
      done = true;
      dest.close();
      reject(new PosternError('TARGET_ERROR', why, { details: { ...conn.where, reason }, sideEffectStarted: true }));
    };
    agent.pipe(dest);
    if (o.rawStdout) dest.on('data', (d: Buffer) => void agent.write(d));
    else dest.on('data', (d: Buffer) => stdout.add(d));
    dest.stderr.on('data', (d: Buffer) => stderr.add(d));
    dest.on('exit', (c: number | null, s?: string) => {
      if (typeof c === 'number') code = c;
      else signal = s ?? null;
    });
    dest.on('close', () => {
      if (done) return;
      done = true;
      const r = o.redactor();
      if (!o.rawStdout && stdout.text() !== '') agent.write(redacted(stdout, r));
      const err = redacted(stderr, r);
      if (err !== '') agent.stderr.write(err);
      o.onExit({ code, signal });
      resolve({
        exit_code: code,
        signal,
        stdout: o.rawStdout ? '' : stdout.text(),
        stderr: stderr.text(),
        stdout_truncated: stdout.truncated,
        stderr_truncated: stderr.truncated,
        stdout_truncated_at: stdout.truncatedAt(),
        stderr_truncated_at: stderr.truncatedAt(),
        host_key_fingerprint: fingerprint,
        side_effect_started: true,
      });
    });
    agent.on('close', () => fail('the agent closed its connection before the command ended', 'agent_gone'));
    conn.onLost(() => fail(`the SSH connection to ${conn.where.host}:${conn.where.port} was lost before the command ended`, 'connection_lost'));
  });
}

/** Runs `action.command` on the destination and joins the agent's channel to it. */
async function relayExec(action: ResolvedSsh, credential: SshCredential, agent: AgentChannel, o: RelayOptions): Promise<SshResult> {
  const conn = new SshConnection(action, sshAuth(credential, action.credential), o.connectTimeoutMs);
  try {
    await conn.ready;
    const dest = await openExec(conn, action.command, o.onExecSent);
    return await joinChannels(agent, dest, conn, o, conn.fingerprint);
  } finally {
    void conn.end();
  }
}

/** The relay as the call's execution stage. */
export function relayStage(agent: AgentChannel, o: Pick<RelayOptions, 'rawStdout' | 'onExit'>): Stage {
  return async (call) => {
    const { svc, trail } = call;
    const { action } = need(call, 'plan');
    const { vault, credential } = need(call, 'held');
    if (action.kind !== 'ssh') throw new PosternError('INTERNAL', 'a gateway call resolved to a non-SSH action');
    trail.step('execute');
    const startedMs = svc.clock.monotonicMs();
    let result: SshResult;
    try {
      result = await relayExec(action, credential, agent, {
        ...o,
        connectTimeoutMs: svc.config.ssh.connect_timeout_ms,
        maxOutputBytes: svc.config.ssh.max_output_bytes,
        readPastCapBytes: svc.state.redactor().readPastCapBytes,
        redactor: () => svc.state.redactor(),
        onExecSent: () => trail.effectStarted(),
      });
    } catch (e) {
      return refuse(await failedExecution(call, e, svc.clock.monotonicMs() - startedMs));
    }
    if (!vault.locked && vault.get(action.credential) !== undefined) vault.markUsed(action.credential);
    return next({ ...call, exec: { result: { kind: 'ssh', result }, startedMs } });
  };
}
