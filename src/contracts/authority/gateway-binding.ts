/**
 * The authority a pre-approval rule that names gateway calls was accepted
 * for (rules built by gateway/gateway-rules.ts): the endpoint and credential
 * of its target, and each repository (with the git program of its direction)
 * or exact command the rule names, with their effect. A gateway entry has no
 * revisions, so this is what the rule is bound to: the rule does not run
 * where the same reach goes further (another endpoint or credential, a
 * command's effect raised, a repository or direction gone), and the catalog
 * diff reports a rule whose reach grew as a widening of the rule. Pure; fails
 * closed.
 */
import { sshReachAuthority, widensAuthority, type Widening } from './authority.js';
import { Effects, type Authority, type Catalog, type Effect, type GatewayAction, type GatewayRuleBinding, type SshTarget } from '../types.js';

/** The program git runs on the destination for each direction. */
export const GIT_PROGRAMS = { push: 'git-receive-pack', fetch: 'git-upload-pack' } as const;

export const directionOf = (action: Exclude<GatewayAction, 'exec'>): 'push' | 'fetch' => (action === 'git-push' ? 'push' : 'fetch');

/** Why `action` cannot run through the gateway on `t` (null: it can). */
export function actionRefused(t: SshTarget, action: GatewayAction): string | null {
  const gw = t.gateway;
  if (gw === undefined) return `target ${t.name} has no gateway entry`;
  if (action === 'exec') return gw.commands.length === 0 ? `the gateway entry of target ${t.name} lists no commands` : null;
  const d = directionOf(action);
  if (gw.git === undefined) return `the gateway entry of target ${t.name} allows no git`;
  return gw.git[d] === 'refused' ? `the gateway entry of target ${t.name} refuses git ${d}` : null;
}

/** What the entry lets a call of `action` reach: its repositories (git) or its commands (exec). */
export function entryReach(t: SshTarget, action: GatewayAction): string[] {
  return action === 'exec' ? (t.gateway?.commands ?? []).map((c) => c.command) : [...(t.gateway?.git?.repositories ?? [])];
}

/** The authority of `reach` (repositories or commands of `action`) on `t`. */
export function reachAuthorityOn(t: SshTarget, action: GatewayAction, reach: readonly string[]): Authority {
  if (action !== 'exec') {
    const program = GIT_PROGRAMS[directionOf(action)];
    return sshReachAuthority(t, action === 'git-push' ? 'write' : 'read', [program], reach.map((r) => [program, r]));
  }
  const commands = (t.gateway?.commands ?? []).filter((c) => reach.includes(c.command));
  const effect = commands.reduce<Effect>((e, c) => (Effects.indexOf(c.effect) > Effects.indexOf(e) ? c.effect : e), 'read');
  return sshReachAuthority(t, effect, [...reach], reach.map((c) => [c]));
}

/** Does the rule's reach, as `catalog` has it, go beyond the authority the rule was accepted for? */
export function gatewayRuleOutgrown(b: GatewayRuleBinding, catalog: Catalog): Widening {
  const t = catalog.targets.get(b.target);
  if (t === undefined || t.kind !== 'ssh') return { widens: true, reasons: [`target ${b.target} is not an SSH target of the catalog`] };
  const refused = actionRefused(t, b.action);
  if (refused !== null) return { widens: true, reasons: [refused] };
  const can = entryReach(t, b.action);
  const gone = b.reach.filter((r) => !can.includes(r));
  if (gone.length > 0) return { widens: true, reasons: gone.map((r) => `${r} is not in the gateway entry of ${t.name}`) };
  return widensAuthority(b.authority, reachAuthorityOn(t, b.action, b.reach));
}

/** Why a gateway rule as built now reaches beyond the same rule as built before; empty when it does not. */
export function gatewayRuleRebinding(old: GatewayRuleBinding, next: GatewayRuleBinding): string[] {
  const w = widensAuthority(old.authority, next.authority);
  return w.widens ? [`its gateway calls reach further: ${w.reasons.join(', ')}`] : [];
}

/** `gateway github git-push`: how a rule's calls are named in summaries. */
export function describeGatewayCalls(b: GatewayRuleBinding): string {
  return `gateway ${b.target} ${b.action}`;
}
