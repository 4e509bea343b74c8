/**
 * `postern agents allow|revoke|list`: other OS users allowed to reach the
 * agent socket (docs/agent-users.md).
 *
 * - `allow NAME [--group]` (passphrase) adds a user (or, with `--group` or
 *   when NAME is only a group, a group) to the MAC'd allow list
 *   (src/home/agent-users.ts). The daemon opens the shared socket
 *   (`<home>-agents/agent.sock`) at its next start when a list exists, and
 *   checks the list at every connection.
 * - `revoke NAME [--group]` (passphrase) removes it: refused from the next
 *   connection on, without a restart.
 * - `list` prints the list as the file says (not verified here: the daemon
 *   verifies it with the vault key at every connection).
 *
 * Invariants: a list that does not verify is replaced, never extended (what
 * an agent wrote is never carried over); names are checked against
 * /etc/passwd and /etc/group before they are written.
 */
import type { Command } from 'commander';
import { judgeAgentUsers, parseEntryName, readAgentUsers, writeAgentUsers, type AgentUserEntry } from '../../home/agent-users.js';
import { osNameKinds } from '../../daemon/mcp/peer-cred.js';
import { PosternError } from '../../rules/errors.js';
import { jsonForTerminal, sanitizeForTerminal as clean } from '../../rules/terminal-text.js';
import { openVault } from '../../vault/index.js';
import { contextFor, type CliContext } from '../context.js';
import { examples } from '../help.js';

async function entryFor(name: string, group: boolean): Promise<AgentUserEntry> {
  parseEntryName(name);
  const kinds = await osNameKinds(name);
  if (group) {
    if (!kinds.group) throw new PosternError('USAGE', `there is no group "${name}" on this system`);
    return { kind: 'group', name };
  }
  if (kinds.user) return { kind: 'user', name };
  if (kinds.group) return { kind: 'group', name };
  throw new PosternError('USAGE', `there is no user or group "${name}" on this system`);
}

const label = (e: AgentUserEntry): string => `${e.kind} ${e.name}`;

/** Opens the vault (passphrase), hands the verified list to `change`, and writes what it returns. */
async function changeList(ctx: CliContext, change: (allowed: AgentUserEntry[]) => AgentUserEntry[]): Promise<void> {
  const pass = await ctx.unlockPassphrase();
  const vault = await openVault(ctx.paths.vault, pass, ctx.vault).finally(() => pass.fill(0));
  try {
    const key = vault.deriveKey('catalog-mac');
    const verdict = judgeAgentUsers(key, await readAgentUsers(ctx.paths));
    if (verdict.kind === 'refused') ctx.out(`warning: ${verdict.reason}; it is replaced (nothing in it is kept).`);
    const allowed = verdict.kind === 'allowed' ? [...verdict.allowed] : [];
    await writeAgentUsers(ctx.paths, key, change(allowed), ctx.clock.now());
  } finally {
    vault.lock();
  }
}

export function registerAgents(program: Command): void {
  const agents = program
    .command('agents')
    .description('other OS users allowed to reach the agent socket (docs/agent-users.md): allow, revoke, list')
    .addHelpText('after', examples(['postern agents allow ci-agent', 'postern agents list', 'postern agents revoke ci-agent']));

  agents
    .command('allow <name>')
    .description('let this OS user (or group) reach the shared agent socket and call tools (passphrase); nothing else of the home')
    .option('--group', 'NAME is a group: every member is allowed')
    .addHelpText('after', examples(['postern agents allow ci-agent', 'postern agents allow --group agents', 'POSTERN_AGENT_SOCKET=~operator/.postern-agents/agent.sock postern mcp   # as the allowed user']))
    .action(async (name: string, o: { group?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const entry = await entryFor(name, o.group === true);
      let already = false;
      await changeList(ctx, (allowed) => {
        already = allowed.some((e) => e.kind === entry.kind && e.name === entry.name);
        return already ? allowed : [...allowed, entry];
      });
      ctx.out(`${label(entry)} ${already ? 'was already' : 'is now'} allowed on the agent socket ${clean(ctx.paths.sharedAgentSocket)}; the daemon opens it at its next start (a running daemon that has it open admits ${entry.kind === 'user' ? 'the user' : 'the members'} from the next connection on).`);
      ctx.out(`as that user: POSTERN_AGENT_SOCKET=${clean(ctx.paths.sharedAgentSocket)} postern mcp (every directory above it must be searchable, x, by that user)`);
    });

  agents
    .command('revoke <name>')
    .description('remove this OS user (or group) from the allow list (passphrase); refused from its next connection on')
    .option('--group', 'NAME is a group')
    .action(async (name: string, o: { group?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      parseEntryName(name);
      let removed = false;
      await changeList(ctx, (allowed) => {
        const kept = allowed.filter((e) => !(e.name === name && (o.group !== true || e.kind === 'group')));
        removed = kept.length !== allowed.length;
        return kept;
      });
      ctx.out(removed ? `${clean(name, 40)} revoked: refused from its next connection on (connections already open go on until they close).` : `${clean(name, 40)} was not allowed.`);
    });

  agents
    .command('list')
    .description('the users and groups allowed on the agent socket, as the file says (not verified here: the daemon verifies it at every connection)')
    .option('--json', 'one JSON object')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const found = await readAgentUsers(ctx.paths);
      const allowed = found.kind === 'stored' ? found.stored.record.allowed : [];
      if (o.json === true) {
        ctx.out(jsonForTerminal({ list: found.kind === 'stored' ? 'present' : found.kind, allowed, shared_socket: found.kind === 'none' ? null : ctx.paths.sharedAgentSocket }));
        return;
      }
      if (found.kind === 'none') return ctx.out('no other OS user is allowed (only the operator reaches the agent socket); `postern agents allow USER` allows one.');
      if (found.kind === 'malformed') return ctx.out('agents.allowed.json is malformed: the daemon admits only the operator; `postern agents allow USER` writes it again.');
      ctx.out(`shared agent socket: ${clean(ctx.paths.sharedAgentSocket)} (not verified here: the daemon verifies the list with the vault key at every connection)`);
      if (allowed.length === 0) ctx.out('nobody else is allowed.');
      for (const e of allowed) ctx.out(`  ${label(e)}`);
    });
}


