/**
 * The approval stage: decide what approval the call needs (approvals/policy),
 * and if a person must answer, put a card in the queue and wait — sending MCP
 * progress meanwhile so the client does not time out. A session-scoped
 * approval becomes a grant bound to (session, tool, authority digest).
 * Denied, timed out, voided and cancelled each end the call with their own
 * code; nothing has been run or journaled as an intent at this point.
 */
import type { Authority, JsonObject, ResolvedAction, Revision, Tool } from '../../contracts/index.js';
import { advertiseTool } from '../../contracts/index.js';
import { requiredApproval } from '../../approvals/policy.js';
import type { TargetView } from '../../protocol/approvals.js';
import { PosternError } from '../../protocol/errors.js';
import type { CallRequest, Services, SessionInfo } from './context.js';
import type { JournalApproval } from './trail.js';

export interface ApprovalSubject {
  readonly tool: Tool;
  readonly revision: Revision;
  readonly authority: Authority;
  readonly seenAuthority: Authority | undefined;
  /** The revision the session planned against (listed or declared in `_meta`); null if it never listed the tool. */
  readonly revisionSeen: number | null;
  readonly action: ResolvedAction;
  readonly rawArguments: unknown;
  readonly normalized: JsonObject;
  readonly adapted: readonly string[];
  readonly key: string | undefined;
  readonly callDigest: string;
}

export function targetView(a: ResolvedAction): TargetView {
  switch (a.kind) {
    case 'http':
      return {
        kind: 'http',
        method: a.method,
        origin: a.origin,
        host: a.host,
        port: a.port,
        path: a.path,
        query: a.query.map(([k, v]) => [k, v] as [string, string]),
        headers: a.headers.map(([k, v]) => [k, v] as [string, string]),
        body: a.bodyText ?? null,
      };
    case 'ssh':
      return { kind: 'ssh', host: a.host, port: a.port, user: a.user, argv: [...a.argv], command: a.command, host_key: a.hostKey.state === 'pinned' ? a.hostKey.fingerprint : null };
  }
}

export async function obtainApproval(svc: Services, session: SessionInfo, req: CallRequest, s: ApprovalSubject): Promise<JournalApproval> {
  const grant = svc.grants.get(session.id, s.tool.name);
  const need = requiredApproval({ policy: s.tool.approval, current: s.authority, seen: s.seenAuthority, grant });
  switch (need.kind) {
    case 'auto':
      return null;
    case 'granted':
      return { mode: 'session', id: need.grant.approvalId, decided_by: need.grant.grantedBy, decided_at: need.grant.grantedAt, outcome: 'approved' };
    case 'ask':
      break;
  }
  const timeoutMs = svc.config.approval_timeout_seconds * 1000;
  const { card, decision } = svc.queue.request(
    {
      session: { id: session.id, client_name: session.clientName, client_version: session.clientVersion, pid: session.pid },
      tool: s.tool.name,
      effect: s.tool.effect,
      annotations: { ...advertiseTool(s.tool).annotations },
      revision: s.revision.revision,
      revision_seen: s.revisionSeen,
      scope_allowed: need.scope,
      reasons: [...need.reasons],
      widening: [...need.widening],
      target: targetView(s.action),
      credential: s.action.credential,
      raw_arguments: s.rawArguments,
      normalized_arguments: s.adapted.length === 0 ? s.rawArguments : svc.state.redactor().redactValue(s.normalized),
      adapter: s.adapted.length === 0 ? null : s.adapted.join('; '),
      idempotency_key: s.key ?? null,
      call_digest: s.callDigest,
    },
    { timeoutMs, signal: req.signal },
  );
  req.progress(`waiting for operator approval ${card.id.slice(0, 8)} (up to ${Math.round(timeoutMs / 1000)} s)`);
  const ping = setInterval(() => req.progress(`still waiting for operator approval ${card.id.slice(0, 8)}`), svc.config.progress_interval_seconds * 1000);
  const d = await decision.finally(() => clearInterval(ping));
  const mode = need.scope === 'session' ? 'session' : 'per-call';
  switch (d.kind) {
    case 'approved':
      if (d.scope === 'session') {
        const g = svc.grants.give({ sessionId: session.id, tool: s.tool.name, revision: s.revision.revision, authority: s.authority, grantedAt: d.at, grantedBy: d.by, approvalId: card.id });
        try {
          svc.journals.sessions.event(session.id, 'grant_given', { tool: s.tool.name, authority_digest: g.authorityDigest, approval_id: card.id, by: d.by });
        } catch {
          // the grant is in memory either way; the call's own journal entry records the approval
        }
      }
      // The record says how this call was approved: once, or for the rest of the session.
      return { mode: d.scope === 'session' ? 'session' : 'per-call', id: card.id, decided_by: d.by, decided_at: d.at, outcome: 'approved' };
    case 'denied':
      throw new ApprovalEnded({ mode, id: card.id, decided_by: d.by, decided_at: d.at, outcome: 'denied' },
        new PosternError('APPROVAL_DENIED', d.reason === null ? 'the operator denied the call' : `the operator denied the call: ${d.reason}`, { details: { reason: d.reason } }));
    case 'timeout':
      throw new ApprovalEnded({ mode, id: card.id, decided_by: null, decided_at: d.at, outcome: 'timeout' },
        new PosternError('APPROVAL_TIMEOUT', `no operator answered within ${Math.round(timeoutMs / 1000)} s; nothing was run`));
    case 'voided':
      throw new ApprovalEnded({ mode, id: card.id, decided_by: null, decided_at: d.at, outcome: 'voided' },
        new PosternError('VAULT_LOCKED', `the approval was voided (${d.reason}); nothing was run`));
    case 'cancelled':
      throw new ApprovalEnded({ mode, id: card.id, decided_by: null, decided_at: d.at, outcome: 'voided' },
        new PosternError('CALL_CANCELLED', 'the client cancelled the call while it waited for approval; nothing was run'));
  }
}

/** Carries the journal's approval record along with the error that ends the call. */
export class ApprovalEnded extends Error {
  constructor(
    readonly record: JournalApproval,
    readonly error: PosternError,
  ) {
    super(error.message);
  }
}
