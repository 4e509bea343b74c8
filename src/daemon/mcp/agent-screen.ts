/**
 * The screen every agent message passes before the MCP SDK sees it, whatever
 * carried it (a line on the agent socket, a POST body on the HTTP listener).
 * One home for these rules; the transports only frame and answer.
 *
 * - not UTF-8, not JSON, or an envelope the SDK would drop without a word →
 *   the answer of `protocol/jsonrpc-screen.ts` (-32700 / -32602 / -32600), or
 *   a silent drop for a notification;
 * - a `tools/call` whose arguments carry an own `__proto__` key → the SDK's
 *   schema copy would drop that key (and re-parent the object), so the call
 *   is refused here as VALIDATION_FAILED (-32602, the tool error in `data`)
 *   and journaled as a rejection like any other.
 * Oversized messages are answered by the transport with
 * `protocol/agent-limits.ts` (`oversizedAnswer`), from the same limit.
 */
import { randomUUID } from 'node:crypto';
import { PosternError } from '../../rules/errors.js';
import { screenBytes } from '../../protocol/jsonrpc-screen.js';
import type { Services, SessionInfo } from '../pipeline/context.js';
import { Trail } from '../pipeline/trail.js';
import { refusedCall } from '../pipeline/refusal.js';

type Json = Record<string, unknown>;
type RpcId = string | number | null;

type AgentScreenVerdict =
  /** Hand the message (parsed here) to the SDK. */
  | { readonly kind: 'pass'; readonly message: unknown }
  /** Answer this instead; the SDK never sees the message. */
  | { readonly kind: 'answer'; readonly response: Json }
  /** The same, once the refusal is journaled (the journal commits in groups). */
  | { readonly kind: 'answer-later'; readonly response: Promise<Json> }
  /** A notification that cannot be used: nothing is answered (JSON-RPC). */
  | { readonly kind: 'drop' };

function asId(v: unknown): RpcId {
  return typeof v === 'string' || (typeof v === 'number' && Number.isFinite(v)) ? v : null;
}

const hasOwn = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

/** Journals the refusal through the call pipeline's own trail and answers with its tool error. */
function refuseProtoKey(svc: Services, session: SessionInfo, id: RpcId, name: unknown, args: unknown): AgentScreenVerdict {
  const tool = typeof name === 'string' ? name : '';
  const trail = new Trail(svc, session, tool, svc.state.snapshot().handlerRevision, randomUUID());
  trail.step('admit');
  trail.step('screen:proto_key');
  try {
    trail.raw(trail.redactor('arguments').redactValue(args));
  } catch {
    // locked: the rejection is journaled without its arguments
  }
  const err = new PosternError('VALIDATION_FAILED', 'the key "__proto__" is not allowed in arguments', { details: { field: '__proto__' } });
  const response = refusedCall(svc, trail, err).then((result): Json => ({ jsonrpc: '2.0', id, error: { code: -32602, message: `Invalid params: ${err.message}`, data: result.structuredContent ?? { error_code: err.code } } }));
  return { kind: 'answer-later', response };
}

/** The verdict on one whole message (already within the size limit). */
export function screenAgentMessage(bytes: Buffer, svc: Services, session: SessionInfo): AgentScreenVerdict {
  const verdict = screenBytes(bytes);
  if (verdict.kind === 'answer') return verdict;
  if (verdict.kind === 'drop') return { kind: 'drop' };
  const msg = verdict.message;
  if (typeof msg === 'object' && msg !== null && !Array.isArray(msg)) {
    const m = msg as Json;
    const params = m['params'];
    if (m['method'] === 'tools/call' && typeof params === 'object' && params !== null) {
      const args = (params as Json)['arguments'];
      if (typeof args === 'object' && args !== null && !Array.isArray(args) && hasOwn(args, '__proto__')) {
        return refuseProtoKey(svc, session, asId(m['id']), (params as Json)['name'], args);
      }
    }
  }
  return { kind: 'pass', message: msg };
}
