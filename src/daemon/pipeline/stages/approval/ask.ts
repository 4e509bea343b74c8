/**
 * Asking for the approval stage (./index.ts): decide what approval the call needs (approvals/policy),
 * and if a person must answer, put a card in the queue and wait — sending MCP
 * progress meanwhile so the client does not time out. A session-scoped
 * approval becomes a grant bound to (session, tool, authority digest).
 * Denied, timed out, voided and cancelled each end the call with their own
 * code; nothing has been run or journaled as an intent at this point.
 *
 * How long a call waits (docs/decisions.md, "Approval waits that fit MCP
 * clients"): a client that sent a progress token is kept waiting up to the
 * approval timeout; one that did not is answered APPROVAL_PENDING after
 * `approval_wait_without_progress_seconds`, before its own request timeout,
 * and the card stays open until its own time runs out, also when the session
 * ends: the same call again (same tool, key and call digest, from any session;
 * a keyless call from its own) waits on that card or takes its decision, and a
 * card no call took back is journaled with how it ended (`approval_ended`).
 * A session grant goes only to the session the card was opened for. A client that gives
 * up (its request's AbortSignal: notifications/cancelled or a closed
 * connection) cancels the card at once. A call that runs as an MCP task
 * waits like one with a progress token (its request was answered with the
 * task at once), and its `tasks/cancel` aborts the same signal.
 *
 * A card's call is re-checked against every catalog accepted while it waits
 * (`guard`): when the call no longer matches the contract it was admitted
 * under, its card is withdrawn (voided) at once and the approval ends
 * marked `contractChanged`, so the stage re-plans the call
 * (../recheck/) — refusing it, or opening a new card for migrated arguments.
 *
 * Unattended (`postern daemon --unattended`, docs/decisions.md "Unattended
 * runs"): no card is ever opened. The accepted catalog's pre-approval rules
 * decide at once (approvals/unattended.ts), and a call no rule covers — or
 * one whose revision widens authority — ends APPROVAL_UNAVAILABLE.
 */
import type { Authority, Catalog, JsonObject, ResolvedAction, Revision, Tool } from '../../../../contracts/index.js';
import { UnavailableReasons, type RuleBudgets } from '../../../../approvals/unattended.js';
import { advertiseTool, authorityDigest } from '../../../../contracts/index.js';
import type { StaleCheck } from '../../../../approvals/queue.js';
import { requiredApproval, type ApprovalRequirement } from '../../../../approvals/policy.js';
import type { ApprovalWait } from '../../../../approvals/parked.js';
import type { ApprovalCard, ApprovalDecision, PresenceProof, TargetView } from '../../../../protocol/approvals.js';
import type { LimitUsage } from '../../../../protocol/limit-usage.js';
import { PosternError } from '../../../../rules/errors.js';
import { progressTokenOf, type CallRequest, type Services, type SessionInfo } from '../../context.js';
import type { JournalApproval } from '../../trail.js';

export interface ApprovalSubject {
  /** The catalog the call was planned against: its pre-approval rules decide an unattended call. */
  readonly catalog: Catalog;
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
  /** The call asking, named in the journal if its card ends with nobody taking the decision. */
  readonly callId?: string;
  /** Why the call no longer matches a given catalog (null while it does); checked at each catalog swap. */
  readonly guard?: StaleCheck;
  /** How much of the tool's limits was used when the card opened ("3 of 10 this session"). */
  readonly limits?: readonly LimitUsage[];
}

type Ask = Extract<ApprovalRequirement, { kind: 'ask' }>;

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

/**
 * How asking ended, as data (never thrown): approved, with the journal's
 * record of how; or ended — denied, timed out, voided, cancelled, pending,
 * unavailable — with its record and the error the call is refused with.
 * `contractChanged`: the card was withdrawn because the accepted catalog
 * changed, and the stage re-plans the call instead of refusing it.
 */
type ApprovalOutcome =
  | { readonly kind: 'approved'; readonly record: JournalApproval }
  | { readonly kind: 'ended'; readonly record: JournalApproval; readonly error: PosternError; readonly contractChanged: boolean };

const approved = (record: JournalApproval): ApprovalOutcome => ({ kind: 'approved', record });
const ended = (record: JournalApproval, error: PosternError, contractChanged = false): ApprovalOutcome => ({ kind: 'ended', record, error, contractChanged });

/** What asking reads of the services: grants, the queue and its cards, the settings, the catalog in use, the clock, the Sessions journal, the unattended rules. */
export type ApprovalServices = Pick<Services, 'grants' | 'unattended' | 'config' | 'queue' | 'state' | 'clock' | 'sessionsJournal'>;

export async function askApproval(svc: ApprovalServices, session: SessionInfo, req: CallRequest, s: ApprovalSubject): Promise<ApprovalOutcome> {
  const grant = svc.grants.get(session.id, s.tool.name);
  const need = requiredApproval({ policy: s.tool.approval, current: s.authority, seen: s.seenAuthority, grant });
  switch (need.kind) {
    case 'auto':
      return approved(null);
    case 'granted':
      return approved({ mode: 'session', id: need.grant.approvalId, decided_by: need.grant.grantedBy, decided_at: need.grant.grantedAt, outcome: 'approved' });
    case 'ask':
      break;
  }
  if (svc.unattended !== null) return approveUnattended(svc, svc.unattended, req, s, need);
  const timeoutMs = svc.config.approval_timeout_seconds * 1000;
  const mode = need.scope === 'session' ? 'session' : 'per-call';
  // The same call, back after APPROVAL_PENDING, waits on the card it left open (or takes its decision):
  // by its key from any session (an agent that reconnected), a keyless call only from its own session.
  const boundTo = s.key === undefined ? session.id : null;
  const parkKey = [boundTo ?? '', s.tool.name, s.key ?? '', s.callDigest, authorityDigest(s.authority)].join('\n');
  const wait = svc.queue.parked.take(parkKey, session.id) ?? openCard(svc, session, s, need, timeoutMs);
  const { card } = wait;
  // The client gave up (notifications/cancelled, or its connection closed): the card leaves the queue at once.
  const onAbort = (): void => wait.cancel();
  if (req.signal.aborted) wait.cancel();
  else req.signal.addEventListener('abort', onAbort, { once: true });
  // A task's request was answered at once: nobody's request timeout runs while it waits.
  const longWait = req.asTask === true || progressTokenOf(req.meta) !== undefined;
  req.progress(`waiting for operator approval ${card.id.slice(0, 8)} (until ${card.expires_at})`);
  req.status?.(`waiting for operator approval ${card.id.slice(0, 8)} (until ${card.expires_at})`);
  const ping = setInterval(() => req.progress(`still waiting for operator approval ${card.id.slice(0, 8)}`), svc.config.progress_interval_seconds * 1000);
  let limit: NodeJS.Timeout | undefined;
  const waitOver = new Promise<'wait_over'>((resolve) => {
    if (!longWait) limit = setTimeout(() => resolve('wait_over'), svc.config.approval_wait_without_progress_seconds * 1000);
  });
  // A catalog accepted meanwhile: the card stays only while the call still matches it.
  let unwatch: () => void = () => undefined;
  const changed = new Promise<{ kind: 'changed'; reason: string }>((resolve) => {
    const guard = s.guard;
    if (guard === undefined) return;
    const check = (): void => {
      const reason = guard(svc.state.snapshot().catalog);
      if (reason !== null) resolve({ kind: 'changed', reason });
    };
    unwatch = svc.state.onSnapshot(check);
    check();
  });
  const d = await Promise.race([wait.decision, waitOver, changed]).finally(() => {
    clearInterval(ping);
    clearTimeout(limit);
    unwatch();
    req.signal.removeEventListener('abort', onAbort);
  });
  if (d !== 'wait_over' && d.kind === 'changed') {
    const reason = `the contract changed while the call waited: ${d.reason}`;
    svc.queue.withdraw(card.id, reason);
    return ended({ mode, id: card.id, decided_by: null, decided_at: svc.clock.now().toISOString(), outcome: 'voided' },
      new PosternError('CONTRACT_STALE', `${reason}; nothing was run`), true);
  }
  if (d === 'wait_over') {
    // Answer before the client's own timeout: a clear "not yet", nothing run, the card still open.
    svc.queue.parked.park(parkKey, boundTo, wait, timeoutMs, (ended) => journalUnclaimed(svc, card, s, ended));
    return ended({ mode, id: card.id, decided_by: null, decided_at: null, outcome: 'pending' },
      new PosternError(
        'APPROVAL_PENDING',
        `the operator has not decided on approval ${card.id.slice(0, 8)} yet; nothing was run. Call again with the same arguments and idempotency_key to wait for the decision (the approval stays open until ${card.expires_at})`,
        { details: { approval_id: card.id, expires_at: card.expires_at } },
      ));
  }
  switch (d.kind) {
    case 'approved':
      req.status?.(`approved by ${d.by}; running`);
      // Taken back from another session: the grant was offered to the card's session, so this call runs once.
      if (d.scope === 'session' && card.session.id !== session.id) return approved({ mode: 'per-call', id: card.id, decided_by: d.by, decided_at: d.at, outcome: 'approved', ...presenceOf(d) });
      if (d.scope === 'session') {
        const g = svc.grants.give({ sessionId: session.id, tool: s.tool.name, revision: s.revision.revision, authority: s.authority, grantedAt: d.at, grantedBy: d.by, approvalId: card.id });
        // The grant is in memory either way (a failed write is logged); the call's own journal entry records the approval.
        svc.sessionsJournal.event(session.id, 'grant_given', { tool: s.tool.name, authority_digest: g.authorityDigest, approval_id: card.id, by: d.by });
      }
      // The record says how this call was approved: once, or for the rest of the session.
      return approved({ mode: d.scope === 'session' ? 'session' : 'per-call', id: card.id, decided_by: d.by, decided_at: d.at, outcome: 'approved', ...presenceOf(d) });
    case 'denied':
      return ended({ mode, id: card.id, decided_by: d.by, decided_at: d.at, outcome: 'denied' },
        new PosternError('APPROVAL_DENIED', d.reason === null ? 'the operator denied the call' : `the operator denied the call: ${d.reason}`, { details: { reason: d.reason } }));
    case 'timeout':
      return ended({ mode, id: card.id, decided_by: null, decided_at: d.at, outcome: 'timeout' },
        new PosternError('APPROVAL_TIMEOUT', `no operator answered approval ${card.id.slice(0, 8)} in time (by ${card.expires_at}); nothing was run`));
    case 'voided':
      return ended({ mode, id: card.id, decided_by: null, decided_at: d.at, outcome: 'voided' },
        new PosternError('VAULT_LOCKED', `the approval was voided (${d.reason}); nothing was run`));
    case 'cancelled':
      return ended({ mode, id: card.id, decided_by: null, decided_at: d.at, outcome: 'cancelled' },
        new PosternError('CALL_CANCELLED', 'the client gave up on the call (cancelled it or closed its connection) while it waited for approval; nothing was run'));
  }
}

/** The WebAuthn assertion an approval on the page carried, for the journal record (absent otherwise). */
const presenceOf = (d: { presence?: PresenceProof | undefined }): { presence?: PresenceProof } => (d.presence === undefined ? {} : { presence: d.presence });

/** A card left open by APPROVAL_PENDING ended and no call took its decision: the journal says how (nothing ran). */
function journalUnclaimed(svc: Pick<Services, 'sessionsJournal'>, card: ApprovalCard, s: ApprovalSubject, d: ApprovalDecision): void {
  // The card is gone either way (a failed write is logged); a journal that cannot be written fails calls on its own.
  svc.sessionsJournal.event(card.session.id, 'approval_ended', {
    approval_id: card.id,
    call_id: s.callId ?? null,
    tool: s.tool.name,
    idempotency_key: s.key ?? null,
    outcome: d.kind,
    decided_by: 'by' in d ? d.by : null,
    at: d.at,
  });
}

/** Nobody is there to ask: a pre-approval rule approves at once, or the call ends APPROVAL_UNAVAILABLE. */
function approveUnattended(svc: Pick<Services, 'clock'>, rules: RuleBudgets, req: CallRequest, s: ApprovalSubject, need: Ask): ApprovalOutcome {
  const d = rules.decide(s.catalog, { tool: s.tool.name, revision: s.revision, normalized: s.normalized, widening: need.widening });
  const at = svc.clock.now().toISOString();
  if (d.kind === 'preapproved') {
    req.status?.(`pre-approved by rule ${d.rule} (${d.used} of ${d.budget} this run); running`);
    return approved({ mode: 'per-call', id: null, decided_by: `rule ${d.rule}`, decided_at: at, outcome: 'approved', rule: d.rule });
  }
  return ended(
    { mode: 'per-call', id: null, decided_by: 'unattended', decided_at: at, outcome: 'denied' },
    new PosternError('APPROVAL_UNAVAILABLE', `${UnavailableReasons[d.reason]}; nothing was run (the daemon runs unattended: nobody can approve it)`, { details: { reason: d.reason, ...(d.rules.length === 0 ? {} : { rules: d.rules }) } }),
  );
}

/** Puts a new card in the queue; its own controller lets the card outlive the call that opened it (APPROVAL_PENDING). */
function openCard(svc: Pick<Services, 'queue' | 'state'>, session: SessionInfo, s: ApprovalSubject, need: Ask, timeoutMs: number): ApprovalWait {
  const ctl = new AbortController();
  const { card, decision } = svc.queue.request(
    {
      session: { id: session.id, client_name: session.clientName, client_version: session.clientVersion, pid: session.pid },
      tool: s.tool.name,
      effect: s.tool.effect,
      presence: s.tool.presence,
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
      limits: [...(s.limits ?? [])],
    },
    { timeoutMs, signal: ctl.signal, ...(s.guard === undefined ? {} : { stale: s.guard }) },
  );
  return { card, decision, cancel: () => ctl.abort() };
}
