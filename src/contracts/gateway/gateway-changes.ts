/**
 * How a catalog change moves what the SSH gateway lets an agent run. One
 * change per target whose `gateway:` entry (or the endpoint and credential it
 * runs on) differs: `authority_widening` when the new entry lets anything run
 * that the old one did not, or with less approval (a repository or command
 * added, a direction opened, an approval loosened, the host, port, user or
 * credential changed); `metadata` when it only narrows. With no old catalog
 * every gateway entry is an addition that widens, so nothing is accepted
 * unseen. Pure.
 */
import type { Change, ChangeReason } from '../change-vocabulary.js';
import type { ApprovalMode, Catalog, GatewayMode, SshGateway, SshTarget } from '../types.js';
import { repositoryKey } from './exec-request.js';

/** Looser modes come first: anything to its right needs more from the operator. */
const LOOSENESS: readonly GatewayMode[] = ['none', 'session', 'per-call', 'refused'];
const looser = (a: GatewayMode, b: GatewayMode): boolean => LOOSENESS.indexOf(b) < LOOSENESS.indexOf(a);

const EMPTY: SshGateway = { git: undefined, commands: [] };

function gitWidening(name: string, o: SshGateway, n: SshGateway, out: { widens: ChangeReason[]; narrows: ChangeReason[] }): void {
  const og = o.git;
  const ng = n.git;
  const oldRepos = new Set((og?.repositories ?? []).map(repositoryKey));
  const newRepos = new Set((ng?.repositories ?? []).map(repositoryKey));
  for (const r of ng?.repositories ?? []) if (!oldRepos.has(repositoryKey(r))) out.widens.push({ code: 'gateway_repository_added', text: `gateway ${name}: repository ${r} added` });
  for (const r of og?.repositories ?? []) if (!newRepos.has(repositoryKey(r))) out.narrows.push({ code: 'gateway_repository_removed', text: `gateway ${name}: repository ${r} removed` });
  for (const d of ['push', 'fetch'] as const) {
    const a: GatewayMode = og?.[d] ?? 'refused';
    const b: GatewayMode = ng?.[d] ?? 'refused';
    if (a === b) continue;
    const text = `gateway ${name}: git ${d} ${a} → ${b}`;
    (looser(a, b) ? out.widens : out.narrows).push({ code: 'gateway_git_mode_changed', text });
  }
}

function commandWidening(name: string, o: SshGateway, n: SshGateway, out: { widens: ChangeReason[]; narrows: ChangeReason[] }): void {
  const before = new Map<string, { approval: ApprovalMode; effect: string }>(o.commands.map((c) => [c.command, c]));
  const after = new Set(n.commands.map((c) => c.command));
  for (const c of n.commands) {
    const was = before.get(c.command);
    if (was === undefined) out.widens.push({ code: 'gateway_command_added', text: `gateway ${name}: command ${JSON.stringify(c.command)} added (approval ${c.approval})` });
    else if (was.approval !== c.approval || was.effect !== c.effect) {
      const text = `gateway ${name}: command ${JSON.stringify(c.command)} approval ${was.approval} → ${c.approval}, effect ${was.effect} → ${c.effect}`;
      (looser(was.approval, c.approval) || was.effect !== c.effect ? out.widens : out.narrows).push({ code: 'gateway_command_changed', text });
    }
  }
  for (const c of o.commands) if (!after.has(c.command)) out.narrows.push({ code: 'gateway_command_removed', text: `gateway ${name}: command ${JSON.stringify(c.command)} removed` });
}

const endpoint = (t: SshTarget): string => `${t.user}@${t.host}:${t.port} with ${t.credential}`;

function targetGatewayChange(name: string, old: SshTarget | undefined, next: SshTarget): Change | null {
  const out = { widens: [] as ChangeReason[], narrows: [] as ChangeReason[] };
  const n = next.gateway ?? EMPTY;
  const o = old?.gateway ?? EMPTY;
  if (next.gateway !== undefined && old?.gateway !== undefined && endpoint(old) !== endpoint(next)) {
    out.widens.push({ code: 'gateway_endpoint_changed', text: `gateway ${name}: runs as ${endpoint(next)} (was ${endpoint(old)})` });
  }
  gitWidening(name, o, n, out);
  commandWidening(name, o, n, out);
  if (out.widens.length === 0 && out.narrows.length === 0) return null;
  const widens = out.widens.length > 0;
  return { tool: `ssh-gateway:${name}`, from: undefined, to: undefined, class: widens ? 'authority_widening' : 'metadata', aspect: 'authority', policy: undefined, reasons: [...out.widens, ...out.narrows] };
}

function sshTargets(c: Catalog | undefined): Map<string, SshTarget> {
  const out = new Map<string, SshTarget>();
  for (const [name, t] of c?.targets ?? []) if (t.kind === 'ssh') out.set(name, t);
  return out;
}

/** The gateway's part of the change from `old` to `candidate`. */
export function gatewayChanges(old: Catalog | undefined, candidate: Catalog): Change[] {
  const before = sshTargets(old);
  const after = sshTargets(candidate);
  const out: Change[] = [];
  for (const [name, t] of after) {
    const c = targetGatewayChange(name, before.get(name), t);
    if (c !== null) out.push(c);
  }
  for (const [name, t] of before) {
    if (after.has(name) || t.gateway === undefined) continue;
    out.push({ tool: `ssh-gateway:${name}`, from: undefined, to: undefined, class: 'metadata', aspect: 'authority', policy: undefined, reasons: [{ code: 'gateway_removed', text: `gateway ${name}: removed with its target` }] });
  }
  return out;
}
