/**
 * The plan of one call against one catalog snapshot: which revision it was
 * planned against, the contract decision, the validated and carried
 * arguments, the resolved action and the digests an approval binds to. A pure
 * function of (catalog, tool name, session, planned revision, arguments, key): the call
 * pipeline plans once at admission, and plans again against the catalog in
 * use after any wait (../recheck/), so the two can be compared.
 *
 * Invariants: every refusal is a PosternError with its own code and nothing
 * has been sent; a returned plan is ready to run (its SSH host key is pinned);
 * the planned revision is one the session is served (contracts/calls/canary.ts
 * `sessionPlan`), never one the agent picked beyond it.
 */
import {
  actionDigest,
  authorityOf,
  canonicalDigest,
  describeIssues,
  prepareCall,
  resolveAction,
  resolveContract,
  sessionPlan,
  type Catalog,
  type JsonObject,
  type Rejection,
  type Tool,
} from '../../../../contracts/index.js';
import { clipLabel } from '../../../../rules/clip.js';
import { PosternError } from '../../../../rules/errors.js';
import type { CallPlan } from '../call-state.js';

export interface PlanInput {
  readonly tool: string;
  /** The session's id: a tool in canary serves its sessions different revisions (contracts/calls/canary.ts). */
  readonly session: string;
  /** The revision the call says it was planned against (origin.ts); undefined: the tool list in use. */
  readonly planned: number | undefined;
  /** The admitted arguments without `idempotency_key`. */
  readonly args: unknown;
  readonly key: string | undefined;
}

/** The contract refusal as the agent is told it. */
function rejectionError(decision: Rejection, planned: number | undefined): PosternError {
  const code = decision.reason === 'revision_retired' || decision.reason === 'tool_retired' ? 'REVISION_RETIRED' : 'CONTRACT_STALE';
  return new PosternError(code, decision.message, {
    details: { seen_revision: planned ?? null, reason: decision.reason, ...(decision.replacement === undefined ? {} : { replacement: decision.replacement }) },
  });
}

/** A plan against a revision this session is not served (the canary revision, outside its cohort), told as a stale contract. */
function notServedError(tool: Tool, planned: number, shown: number): PosternError {
  return new PosternError('CONTRACT_STALE', `${tool.name}: revision ${planned} is not served to this session, which is shown revision ${shown}; nothing was run. List the tools again and plan the call anew`, {
    details: { seen_revision: planned, reason: 'not_served', shown_revision: shown },
  });
}

/** What the journal learns while a call is planned, stage by stage (so a refusal still records how far it got). */
interface PlanHooks {
  step(s: string): void;
  prepared(normalized: JsonObject, revision: number, adapted: readonly string[]): void;
}

const quiet: PlanHooks = { step: () => undefined, prepared: () => undefined };

/** Plans the call against `catalog`. */
export function planCall(catalog: Catalog, input: PlanInput, hooks: PlanHooks = quiet): CallPlan {
  const step = (s: string): void => hooks.step(s);
  const tool = catalog.tools.get(input.tool);
  if (tool === undefined) throw new PosternError('TOOL_NOT_FOUND', `there is no tool "${clipLabel(input.tool, 64)}"; list the tools again`);
  const served = sessionPlan(tool, input.session, input.planned);
  if (served.kind === 'not_served') throw notServedError(tool, input.planned ?? tool.current.revision, served.shown);
  const planned = served.revision;
  const decision = resolveContract(tool, planned);
  if (decision.kind === 'reject') throw rejectionError(decision, planned);
  step(`resolve:${decision.kind}`);

  step('validate');
  const prepared = prepareCall(decision, input.args);
  if (prepared.kind === 'reject') throw new PosternError('CONTRACT_STALE', prepared.message);
  if (prepared.kind === 'invalid') {
    throw new PosternError('VALIDATION_FAILED', `invalid arguments for revision ${prepared.revision}: ${describeIssues(prepared.issues)}`, {
      details: { fields: prepared.issues.map((i) => i.field), revision: prepared.revision },
    });
  }
  const revision = prepared.revision;
  hooks.prepared(prepared.normalized, revision.revision, prepared.adapted);
  const resolved = resolveAction(revision, prepared.normalized, { idempotencyKey: input.key });
  if (resolved.kind === 'refused') {
    throw new PosternError('VALIDATION_FAILED', `${resolved.field}: ${resolved.problem}`, { details: { field: resolved.field } });
  }
  const action = resolved.action;
  if (action.kind === 'ssh' && action.hostKey.state !== 'pinned') {
    // Nothing could run: no approval is asked for and the host is not contacted.
    throw new PosternError('HOST_KEY_UNKNOWN', `the SSH target "${action.target}" has no pinned host key; the operator must run \`postern ssh trust ${action.target}\``, {
      details: { target: action.target, host: action.host, port: action.port },
    });
  }
  const plannedRev = decision.kind === 'current' ? undefined : decision.seen;
  return {
    tool,
    session: input.session,
    planned,
    decision,
    revision,
    normalized: prepared.normalized,
    adapted: prepared.adapted,
    action,
    authority: authorityOf(tool, revision, catalog),
    plannedAuthority: plannedRev === undefined ? undefined : authorityOf(tool, plannedRev, catalog),
    argsDigest: canonicalDigest({ tool: tool.name, revision: revision.revision, arguments: prepared.normalized }),
    callDigest: canonicalDigest({ tool: tool.name, revision: revision.revision, credential: action.credential, arguments: prepared.normalized, action: actionDigest(action) }),
  };
}
