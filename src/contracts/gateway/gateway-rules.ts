/**
 * Pre-approval rules that name gateway calls: a rule of `preapprovals:` with
 * `gateway: <ssh target>` and `action: git-push | git-fetch | exec` instead of
 * `tool:`, constraining the call's normalized arguments (host, port, user,
 * key, command, repository, direction) like a tool rule. Its tool name is the
 * call's, `ssh-gateway:<target>:<action>`, so budgets, the run report and the
 * audit trail treat it as any rule.
 *
 *   ci_push:
 *     gateway: github
 *     action: git-push
 *     budget: 5
 *     arguments: { repository: { one_of: [org/repo] } }
 *
 * Invariants: checked against the target's `gateway:` entry — the target is
 * an SSH target whose entry allows the action, each `equal` / `one_of` value
 * is one a call of that action on that target can have (a repository among
 * the entry's, a command among its commands, the target's own host, user and
 * key). A gateway entry has no revisions, so a rule names its reach itself:
 * a git rule names its repositories, an exec rule its commands (`equal` or
 * `one_of`); what the entry adds later is outside every rule. The rule is
 * bound to the authority its reach had when it was built (`authority`,
 * authority/gateway-binding.ts). Pure.
 */
import { canonicalJson } from '../../rules/canonical.js';
import { actionRefused, directionOf, entryReach, GIT_PROGRAMS, reachAuthorityOn } from '../authority/gateway-binding.js';
import { buildConstraints, constraintHolds, type ConstraintsIn } from '../authority/rule-constraints.js';
import type { DocPath, IssueSink } from '../issues.js';
import type { JsonValue } from '../schema/json.js';
import type { ArgConstraint, GatewayAction, GatewayRuleBinding, PreapprovalRule, SshTarget, Target } from '../types.js';
import { gitCommand } from './exec-request.js';
import { GATEWAY_TOOL_PREFIX, gatewayInputSchema } from './gateway-tool.js';

interface GatewayRuleShape {
  readonly gateway: string;
  readonly action: GatewayAction;
  readonly arguments?: Record<string, ConstraintsIn> | undefined;
  readonly budget: number;
  readonly revision?: number | undefined;
}

interface GatewayRuleTargets {
  readonly targets: ReadonlyMap<string, Target>;
  /** Targets named in the file (one with problems of its own is reported there, not at the rule). */
  readonly declaredTargets: ReadonlySet<string>;
}

/** The argument that names what a rule of `action` reaches: the repository of a git call, the command of an exec. */
const reachArgument = (action: GatewayAction): 'repository' | 'command' => (action === 'exec' ? 'command' : 'repository');

/** Every value each normalized argument of an `action` call on `t` can have; an argument the call never has is absent. */
function possibleValues(t: SshTarget, action: GatewayAction): Map<string, JsonValue[]> {
  const m = new Map<string, JsonValue[]>([['host', [t.host]], ['port', [t.port]], ['user', [t.user]], ['key', [t.credential]]]);
  if (action === 'exec') {
    m.set('command', entryReach(t, action));
    return m;
  }
  const d = directionOf(action);
  const repos = entryReach(t, action);
  m.set('repository', [...repos]);
  m.set('direction', [d]);
  m.set('command', repos.map((r) => gitCommand(GIT_PROGRAMS[d], r)));
  return m;
}

function listed(vs: readonly JsonValue[]): string {
  const shown = vs.slice(0, 8).map((v) => (typeof v === 'string' ? v : canonicalJson(v)));
  return vs.length > 8 ? `${shown.join(', ')}, …` : shown.join(', ');
}

/** Files every `equal` / `one_of` value no call of `action` on `t` can have; false when there was one. */
function valuesFit(at: DocPath, t: SshTarget, action: GatewayAction, args: readonly (readonly [string, readonly ArgConstraint[]])[], sink: IssueSink): boolean {
  const possible = possibleValues(t, action);
  let ok = true;
  const check = (where: DocPath, arg: string, v: JsonValue, can: readonly JsonValue[]): void => {
    if (can.some((x) => canonicalJson(x) === canonicalJson(v))) return;
    ok = false;
    sink.add(where, `${JSON.stringify(v)} is never the ${arg} of a ${action} call on target ${t.name} (it can be: ${listed(can)})`);
  };
  for (const [arg, cs] of args) {
    const p = [...at, 'arguments', arg];
    const can = possible.get(arg);
    if (can === undefined) {
      sink.add(p, `a ${action} call has no "${arg}"`);
      ok = false;
      continue;
    }
    for (const c of cs) {
      if (c.kind === 'equal') check([...p, 'equal'], arg, c.value, can);
      if (c.kind === 'one_of') c.values.forEach((v, i) => check([...p, 'one_of', i], arg, v, can));
    }
  }
  return ok;
}

/** The repositories or commands the rule names and its other constraints admit; undefined (filed) when it names none. */
function reachOfRule(at: DocPath, t: SshTarget, action: GatewayAction, args: readonly (readonly [string, readonly ArgConstraint[]])[], sink: IssueSink): string[] | undefined {
  const arg = reachArgument(action);
  const what = arg === 'command' ? 'commands' : 'repositories';
  const cs = args.find(([a]) => a === arg)?.[1] ?? [];
  if (!cs.some((c) => c.kind === 'equal' || c.kind === 'one_of')) {
    sink.add([...at, 'arguments'], `a ${action} rule names the ${what} it covers (${arg}: with equal or one_of), so what the gateway entry of ${t.name} adds later is never pre-approved unseen`);
    return undefined;
  }
  const reach = (possibleValues(t, action).get(arg) ?? []).filter((v): v is string => typeof v === 'string' && cs.every((c) => constraintHolds(c, v)));
  if (reach.length === 0) {
    sink.add([...at, 'arguments', arg], `the constraints on ${arg} admit none of the ${what} of target ${t.name}`);
    return undefined;
  }
  return reach;
}

function gatewayTarget(at: DocPath, shape: GatewayRuleShape, sink: IssueSink, ctx: GatewayRuleTargets): SshTarget | undefined {
  const t = ctx.targets.get(shape.gateway);
  if (t === undefined) {
    if (!ctx.declaredTargets.has(shape.gateway)) sink.add([...at, 'gateway'], `names target "${shape.gateway}", which is not in the catalog`);
    return undefined;
  }
  if (t.kind !== 'ssh') {
    sink.add([...at, 'gateway'], `target ${t.name} is an HTTP target; a gateway rule names an SSH target with a gateway: entry`);
    return undefined;
  }
  const refused = actionRefused(t, shape.action);
  if (refused !== null) sink.add([...at, 'action'], `${shape.action} does not run through the gateway: ${refused}`);
  if (shape.revision !== undefined) sink.add([...at, 'revision'], 'a gateway call has no revisions: a gateway rule is accepted for the repositories or commands it names');
  return refused === null && shape.revision === undefined ? t : undefined;
}

/** Builds one gateway rule (`gateway:` and `action:`), every problem filed under `at`. */
export function buildGatewayRule(name: string, at: DocPath, shape: GatewayRuleShape, sink: IssueSink, ctx: GatewayRuleTargets): PreapprovalRule | undefined {
  const t = gatewayTarget(at, shape, sink, ctx);
  if (t === undefined) return undefined;
  const args = buildConstraints(at, shape.arguments ?? {}, gatewayInputSchema().node, `a gateway ${shape.action} call`, sink);
  if (args === undefined || !valuesFit(at, t, shape.action, args, sink)) return undefined;
  const reach = reachOfRule(at, t, shape.action, args, sink);
  if (reach === undefined) return undefined;
  const gateway: GatewayRuleBinding = { target: t.name, action: shape.action, reach, authority: reachAuthorityOn(t, shape.action, reach) };
  return { name, tool: `${GATEWAY_TOOL_PREFIX}${t.name}:${shape.action}`, revision: 1, arguments: args, budget: shape.budget, gateway };
}
