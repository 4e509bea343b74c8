/**
 * A gateway exec request as the call pipeline knows calls: a tool (never
 * listed to MCP agents: its name holds ":", which no catalog or MCP tool name
 * may), one revision, and its authority. Pure and derived from the target
 * alone, so the same target always gives the same tool, and a changed
 * `gateway:` entry gives another authority (session grants bound to the old
 * one stop applying).
 *
 * Names: `ssh-gateway:<target>:git-push`, `…:git-fetch`, `…:exec`.
 * Authority: the target's endpoint and credential, and every command the
 * entry lets that tool run (for git: the program with each repository), so
 * adding a repository or a command widens it (widensAuthority).
 */
import { IssueSink } from '../issues.js';
import { parseSchema } from '../schema/schema-parse.js';
import { compileSchema } from '../schema/schema-zod.js';
import { sshReachAuthority, type Authority } from '../authority/authority.js';
import type { ApprovalMode, CompiledSchema, Effect, GatewayAction, Revision, SshTarget, Tool } from '../types.js';
import type { GatewayExec } from './exec-request.js';

export const GATEWAY_TOOL_PREFIX = 'ssh-gateway:';

/** The last part of a gateway tool's name. */
export const GATEWAY_ACTIONS = ['git-push', 'git-fetch', 'exec'] as const satisfies readonly GatewayAction[];

const text = (max: number): Record<string, unknown> => ({ type: 'string', maxLength: max });

/** The normalized arguments of a gateway call (what the journal and the card show). */
const INPUT_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: { host: text(253), port: { type: 'integer', minimum: 1, maximum: 65535 }, user: text(64), key: text(64), command: text(1100), repository: text(200), direction: { enum: ['push', 'fetch'] } },
  required: ['host', 'port', 'user', 'key', 'command'],
};

let compiled: CompiledSchema | undefined;
export function gatewayInputSchema(): CompiledSchema {
  if (compiled !== undefined) return compiled;
  const sink = new IssueSink();
  const node = parseSchema(INPUT_SCHEMA, ['gateway'], sink, 'input');
  if (node === undefined) throw new Error(`gateway input schema: ${sink.issues.map((i) => i.message).join('; ')}`);
  compiled = compileSchema(node);
  return compiled;
}

function gatewayToolName(target: string, e: GatewayExec): string {
  return `${GATEWAY_TOOL_PREFIX}${target}:${e.kind === 'git' ? `git-${e.direction}` : 'exec'}`;
}

/** Every command line the gateway may run for the tool `e` belongs to. */
function reachOf(target: SshTarget, e: GatewayExec): { readonly programs: string[]; readonly commands: string[][] } {
  if (e.kind === 'command') return { programs: [e.command], commands: [[e.command]] };
  const repos = target.gateway?.git?.repositories ?? [];
  return { programs: [e.program], commands: repos.map((r) => [e.program, r]) };
}

export function gatewayAuthority(target: SshTarget, e: GatewayExec): Authority {
  const reach = reachOf(target, e);
  return sshReachAuthority(target, effectOf(e), reach.programs, reach.commands);
}

function effectOf(e: GatewayExec): Effect {
  if (e.kind === 'command') return e.effect;
  return e.direction === 'push' ? 'write' : 'read';
}

/** The tool (one revision) a gateway exec runs as. */
export function gatewayTool(target: SshTarget, e: GatewayExec): Tool {
  const name = gatewayToolName(target.name, e);
  const approval: ApprovalMode = e.approval;
  const revision: Revision = {
    tool: name,
    revision: 1,
    input: gatewayInputSchema(),
    output: undefined,
    action: { kind: 'ssh', target, argv: e.kind === 'git' ? [{ kind: 'literal', value: e.program }, { kind: 'param', param: 'repository' }] : [{ kind: 'literal', value: e.command }], programs: [] },
    previous: undefined,
    deprecated: undefined,
    deprecationReplacement: undefined,
    retired: undefined,
    semanticChange: undefined,
    canary: undefined,
  };
  const what = e.kind === 'git' ? `git ${e.direction} through the SSH gateway` : 'an exact command through the SSH gateway';
  const presence = effectOf(e) === 'destructive' && approval !== 'none' ? 'required' : 'none';
  return { name, description: `${what} on target ${target.name}`, effect: effectOf(e), approval, presence, revisions: [revision], current: revision };
}
