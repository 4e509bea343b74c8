/**
 * The plan of one gateway exec request against one catalog snapshot, in the
 * shape every call has (pipeline/plan.ts's CallPlan), so the stages that
 * follow — credential, limits, approval, intent, outcome — treat it as any
 * other call. A pure function of (catalog, target name, exec command,
 * session): planned again after any wait and compared (`samePlan`).
 *
 * Invariants: a refusal is a PosternError with nothing sent; a returned plan
 * names only what the catalog's `gateway:` entry allows, with the catalog's
 * spelling of the repository or command, and a pinned host key.
 */
import { authorityDigest, canonicalDigest, actionDigest, type Catalog, type JsonObject, type ResolvedSsh, type SshTarget } from '../../contracts/index.js';
import { judgeExec, describeExec, shown, type GatewayExec } from '../../contracts/gateway/exec-request.js';
import { gatewayAuthority, gatewayTool } from '../../contracts/gateway/gateway-tool.js';
import { PosternError } from '../../rules/errors.js';
import type { CallPlan } from '../pipeline/stages/call-state.js';

export interface GatewayRequest {
  /** The catalog target the client named (POSTERN_TARGET, or its login user). */
  readonly target: string;
  /** The exec request's command, as the client sent it. */
  readonly exec: string;
}

export interface GatewayPlan {
  readonly plan: CallPlan;
  readonly exec: GatewayExec;
  readonly target: SshTarget;
  /** `git push to github.com:org/repo.git as git (key deploy)`. */
  readonly summary: string;
}

const refused = (reason: string): PosternError => new PosternError('GATEWAY_REFUSED', `${reason}; nothing was sent`, { details: { reason } });

function targetOf(catalog: Catalog, name: string): SshTarget {
  const t = catalog.targets.get(name);
  if (t === undefined || t.kind !== 'ssh') throw refused(`there is no SSH target ${shown(name)} in the catalog`);
  return t;
}

function resolved(tool: string, t: SshTarget, e: GatewayExec): ResolvedSsh {
  return {
    kind: 'ssh',
    tool,
    revision: 1,
    target: t.name,
    credential: t.credential,
    host: t.host,
    port: t.port,
    user: t.user,
    hostKey: t.hostKey,
    argv: e.kind === 'git' ? [e.program, e.repository] : [e.command],
    command: e.command,
  };
}

export function planGatewayExec(catalog: Catalog, req: GatewayRequest, session: string): GatewayPlan {
  const target = targetOf(catalog, req.target);
  const verdict = judgeExec(target, req.exec);
  if (verdict.kind === 'refused') throw refused(verdict.reason);
  const exec = verdict.exec;
  if (target.hostKey.state !== 'pinned') {
    throw new PosternError('HOST_KEY_UNKNOWN', `the SSH target "${target.name}" has no pinned host key; the operator must run \`postern ssh trust ${target.name}\``, {
      details: { target: target.name, host: target.host, port: target.port },
    });
  }
  const tool = gatewayTool(target, exec);
  const revision = tool.current;
  const action = resolved(tool.name, target, exec);
  const normalized: JsonObject = {
    host: target.host,
    port: target.port,
    user: target.user,
    key: target.credential,
    command: exec.command,
    ...(exec.kind === 'git' ? { repository: exec.repository, direction: exec.direction } : {}),
  };
  const plan: CallPlan = {
    tool,
    session,
    planned: undefined,
    decision: { kind: 'current', execute: revision },
    revision,
    normalized,
    adapted: [],
    action,
    authority: gatewayAuthority(target, exec),
    plannedAuthority: undefined,
    argsDigest: canonicalDigest({ tool: tool.name, revision: 1, arguments: normalized }),
    callDigest: canonicalDigest({ tool: tool.name, revision: 1, credential: action.credential, arguments: normalized, action: actionDigest(action) }),
  };
  return { plan, exec, target, summary: describeExec(target, exec) };
}

/** Why `old` no longer plans the same under `catalog` (null: it does, and may run). */
export function replanReason(old: GatewayPlan, catalog: Catalog, req: GatewayRequest): string | null {
  let next: GatewayPlan;
  try {
    next = planGatewayExec(catalog, req, old.plan.session);
  } catch (e) {
    return e instanceof PosternError ? `${e.code}: ${e.message}` : 'it cannot be planned any more';
  }
  if (next.plan.callDigest !== old.plan.callDigest) return 'the command, repository or endpoint it would run changed';
  if (next.plan.tool.approval !== old.plan.tool.approval) return `its approval changed ${old.plan.tool.approval} → ${next.plan.tool.approval}`;
  if (authorityDigest(next.plan.authority) !== authorityDigest(old.plan.authority)) return 'what the gateway allows on this target changed';
  return null;
}
