/**
 * One exec request on the gateway, start to finish: the call (stages.ts)
 * run with its own trail like any tool call, and the agent's channel told how
 * it ended — the destination's exit status when the relay ran, else one line
 * on its stderr (`postern: GATEWAY_REFUSED: …`) and exit status 1. While the
 * call waits for the operator, the agent's terminal is told so on stderr.
 * Never throws.
 */
import { randomUUID } from 'node:crypto';
import { parseExec } from '../../contracts/gateway/exec-request.js';
import { GATEWAY_TOOL_PREFIX } from '../../contracts/gateway/gateway-tool.js';
import { clipLabel } from '../../rules/clip.js';
import { escapeForTerminal } from '../../rules/terminal-text.js';
import type { CallRequest, Services, SessionInfo } from '../pipeline/context.js';
import { callIdentity } from '../pipeline/identity.js';
import { runStages } from '../pipeline/stages/index.js';
import { Trail } from '../pipeline/trail.js';
import { relayStage, type AgentChannel } from './relay.js';
import type { GatewayRequest } from './plan.js';
import { gatewayStages } from './stages.js';

/** The server side of an exec channel: the agent's streams plus how to end them. */
interface ExecChannel extends AgentChannel {
  exit(status: number): void;
  exit(signalName: string, coreDumped?: boolean, msg?: string): void;
  end(): this;
}

/** The tool name the call is journaled under, from the request alone (before any catalog is read). */
function gatewayCallName(target: string, exec: string): string {
  const p = parseExec(exec);
  return `${GATEWAY_TOOL_PREFIX}${clipLabel(target, 64)}:${p.kind === 'git' ? `git-${p.direction}` : 'exec'}`;
}

/** One line for the agent's stderr: daemon text, with anything the agent sent already escaped by its maker. */
export function refusalLine(code: string, message: string): string {
  return `postern: ${code}: ${escapeForTerminal(message)}\n`;
}

/**
 * Runs one exec request; `requestedBy` is the card's context line (the client process's
 * command line, or why it was not found: peer-process.ts).
 */
export async function runGatewayExec(svc: Services, session: SessionInfo, g: GatewayRequest, requestedBy: string, ch: ExecChannel): Promise<void> {
  const { target, exec } = g;
  const abort = new AbortController();
  let finished = false;
  ch.on('close', () => {
    if (!finished) abort.abort();
  });
  const relayed: { exit: { code: number | null; signal: string | null } | null } = { exit: null };
  const req: CallRequest = {
    name: gatewayCallName(target, exec),
    arguments: { target, exec },
    // A progress token: the client is kept informed on stderr, so the approval wait runs its whole time.
    meta: { progressToken: 'ssh-gateway' },
    signal: abort.signal,
    progress: (message) => void ch.stderr.write(`postern: ${escapeForTerminal(message)}\n`),
  };
  const snapshot = svc.state.snapshot();
  const trail = new Trail(svc, session, req.name, snapshot.handlerRevision, randomUUID());
  trail.identity(callIdentity(session, req.meta));
  const rawStdout = parseExec(exec).kind === 'git';
  const stages = gatewayStages(g, requestedBy, relayStage(ch, { rawStdout, onExit: (e) => void (relayed.exit = e) }));
  const running = runStages({ svc, session, req, trail, snapshot, releases: [] }, stages);
  svc.inflight.add(running);
  const result = await running.finally(() => svc.inflight.delete(running));
  trail.ended();
  finished = true;
  const end = relayed.exit;
  if (end !== null) {
    if (end.code !== null) ch.exit(end.code);
    else ch.exit(end.signal ?? 'KILL');
  } else {
    const facts = (result.structuredContent ?? {}) as Record<string, unknown>;
    const code = typeof facts['error_code'] === 'string' ? facts['error_code'] : 'TARGET_ERROR';
    const message = typeof facts['message'] === 'string' ? facts['message'] : 'the request failed';
    ch.stderr.write(refusalLine(code, message));
    ch.exit(result.isError === true ? 1 : 0);
  }
  ch.end();
}
