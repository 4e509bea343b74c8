/**
 * `postern approvals list|show|approve|deny` — the operator's CLI on the
 * daemon's operator socket. The vault passphrase proves the operator: the
 * command opens the vault, copies its operator-auth key, locks the vault and
 * authenticates with that key (src/cli/operator-client.ts).
 *
 * Invariants: every string taken from a card passes through
 * sanitizeForTerminal (or jsonForTerminal) before it is printed; an approval
 * is always bound to the call digest of the card the id resolved to, so the
 * daemon refuses it if the call is not the one named; a session grant is
 * refused for a card that cannot be shown in full; ids may be given as a
 * unique prefix, never an ambiguous one.
 */
import { lstat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Command } from 'commander';
import { openVault } from '../../vault/index.js';
import { PosternError } from '../../protocol/errors.js';
import type { ApprovalCard, ApprovalDecision, OperatorVerdict } from '../../protocol/approvals.js';
import { OPERATOR_SOCKET_FILE } from '../../protocol/operator.js';
import { contextFor, type CliContext } from '../context.js';
import { NO_DAEMON_MESSAGE, connectOperator, type OperatorConnection } from '../operator-client.js';
import { jsonForTerminal, sanitizeForTerminal as clean, sanitizeWithInfo } from '../../protocol/terminal-text.js';
import { renderTable } from '../table.js';

const SHORT_ID = 8;
const SHOW_MAX = 2_000;

export function operatorSocketPath(ctx: CliContext): string {
  return join(ctx.paths.runDir, OPERATOR_SOCKET_FILE);
}

export interface ApprovalsDeps {
  /** Where the operator key comes from; the default asks for the passphrase and opens the vault. */
  readonly operatorKey?: (ctx: CliContext) => Promise<Uint8Array>;
}

/** The vault's operator-auth key (a copy the caller zeroes); the vault is locked again at once. */
async function keyFromVault(ctx: CliContext): Promise<Uint8Array> {
  const pass = await ctx.unlockPassphrase();
  try {
    const v = await openVault(ctx.paths.vault, pass, { clock: ctx.clock });
    try {
      return Uint8Array.from(v.deriveKey('operator-auth'));
    } finally {
      v.lock();
    }
  } finally {
    pass.fill(0);
  }
}

/** Runs `fn` on an authenticated connection; asks for the passphrase only if a socket exists. */
async function withOperator<T>(ctx: CliContext, deps: ApprovalsDeps, fn: (c: OperatorConnection) => Promise<T>): Promise<T> {
  const socketPath = operatorSocketPath(ctx);
  try {
    await lstat(socketPath);
  } catch {
    throw new PosternError('DAEMON_UNAVAILABLE', NO_DAEMON_MESSAGE);
  }
  const key = await (deps.operatorKey ?? keyFromVault)(ctx);
  try {
    const conn = await connectOperator(socketPath, key);
    try {
      return await fn(conn);
    } finally {
      conn.close();
    }
  } finally {
    key.fill(0);
  }
}

function duration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

function shellWord(a: string): string {
  return /^[A-Za-z0-9_./:=@%+,-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

/** One line naming where the call goes: method + URL, or ssh user@host and argv. */
export function targetSummary(card: ApprovalCard): string {
  const t = card.target;
  switch (t.kind) {
    case 'http': {
      const query = t.query.length === 0 ? '' : `?${t.query.map(([k, v]) => `${k}=${v}`).join('&')}`;
      return `${t.method} ${t.origin}${t.path}${query}`;
    }
    case 'ssh':
      return `ssh ${t.user}@${t.host}${t.port === 22 ? '' : `:${t.port}`} ${t.argv.map(shellWord).join(' ')}`;
  }
}

export function cardRow(card: ApprovalCard, now: Date): string[] {
  const client = `${card.session.client_name ?? '?'}${card.session.pid === null ? '' : ` pid ${card.session.pid}`}`;
  const rev = `r${card.revision}${card.revision_seen !== null && card.revision_seen !== card.revision ? ` (seen r${card.revision_seen})` : ''}`;
  const age = duration(now.getTime() - Date.parse(card.requested_at));
  const left = duration(Date.parse(card.expires_at) - now.getTime());
  return [
    clean(card.id.slice(0, SHORT_ID)),
    clean(card.tool, 40),
    rev,
    clean(client, 30),
    clean(targetSummary(card), 70),
    clean(card.credential ?? '-', 30),
    `${age} ago, ${left} left`,
    card.widening.length > 0 ? 'WIDENS' : '',
  ];
}

/** The full card, one field a line; `hidden` counts characters that did not fit. */
export function cardDetails(card: ApprovalCard): { lines: string[]; hidden: number } {
  let hidden = 0;
  const lines: string[] = [];
  const field = (name: string, value: string): void => {
    const s = sanitizeWithInfo(value, SHOW_MAX);
    hidden += s.hidden;
    lines.push(`${name.padEnd(14)}${s.text}`);
  };
  const json = (v: unknown): string => JSON.stringify(v) ?? 'undefined';
  field('id', card.id);
  field('session', `${card.session.id} ${card.session.client_name ?? '?'} ${card.session.client_version ?? ''} pid ${card.session.pid ?? '?'}`);
  field('tool', `${card.tool} (${card.effect}) r${card.revision}, session saw ${card.revision_seen === null ? 'none' : `r${card.revision_seen}`}`);
  field('approval', card.scope_allowed === 'session' ? 'once or for the session' : 'once only');
  for (const r of card.reasons) field('reason', r);
  for (const w of card.widening) field('WIDENS', w);
  field('target', targetSummary(card));
  const t = card.target;
  if (t.kind === 'http') {
    field('host', `${t.host} port ${t.port}`);
    for (const [k, v] of t.headers) field('header', `${k}: ${v}`);
    if (t.body !== null) field('body', t.body);
  } else {
    field('host', `${t.host} port ${t.port}, host key ${t.host_key ?? 'not pinned'}`);
    field('command', t.command);
    t.argv.forEach((a, i) => field(`argv[${i}]`, a));
  }
  field('credential', card.credential ?? '-');
  if (card.adapter !== null) field('adapter', card.adapter);
  field('raw args', json(card.raw_arguments));
  field('normalized', json(card.normalized_arguments));
  field('idempotency', card.idempotency_key ?? '-');
  field('digest', card.call_digest);
  field('requested', `${card.requested_at}, expires ${card.expires_at}`);
  return { lines, hidden };
}

/** The card a full id or unique prefix names. */
export function resolveCard(cards: readonly ApprovalCard[], given: string): ApprovalCard {
  const exact = cards.find((c) => c.id === given);
  if (exact !== undefined) return exact;
  const matches = given === '' ? [] : cards.filter((c) => c.id.startsWith(given));
  const shown = clean(given, 64);
  if (matches.length === 1 && matches[0] !== undefined) return matches[0];
  if (matches.length === 0) throw new PosternError('APPROVAL_NOT_FOUND', `no pending approval ${shown}: see \`postern approvals list\``);
  throw new PosternError('USAGE', `${matches.length} pending approvals start with ${shown}: give more of the id`);
}

/** The verdict for `approve`, bound to the card's digest (a prefix of ≥ 12 characters is accepted). */
export function approveVerdict(card: ApprovalCard, o: { session?: boolean; digest?: string }): OperatorVerdict {
  let digest = card.call_digest;
  if (o.digest !== undefined) {
    const prefixOk = o.digest.length >= 12 && card.call_digest.startsWith(o.digest);
    // A digest that does not match is sent as given, and the daemon refuses it (APPROVAL_MISMATCH).
    digest = prefixOk ? card.call_digest : o.digest;
  }
  return { verdict: 'approve', scope: o.session === true ? 'session' : 'once', call_digest: digest };
}

function describeDecision(card: ApprovalCard, d: ApprovalDecision): string {
  const what = `${clean(card.id.slice(0, SHORT_ID))} (${clean(card.tool, 40)})`;
  switch (d.kind) {
    case 'approved':
      return `approved ${what} ${d.scope === 'session' ? 'for this session' : 'once'}, by ${clean(d.by, 40)}`;
    case 'denied':
      return `denied ${what}, by ${clean(d.by, 40)}${d.reason === null ? '' : `: ${clean(d.reason, 200)}`}`;
    case 'timeout':
    case 'voided':
    case 'cancelled':
      return `${what} was already ${d.kind}`;
  }
}

export function registerApprovals(program: Command, deps: ApprovalsDeps = {}): void {
  const approvals = program.command('approvals').description('list, approve and deny calls waiting for the operator (needs the vault passphrase)');

  approvals
    .command('list')
    .description('list pending approvals')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const cards = await withOperator(ctx, deps, (c) => c.request('approvals.list'));
      if (o.json === true) ctx.out(jsonForTerminal(cards));
      else if (cards.length === 0) ctx.out('no pending approvals');
      else {
        const now = ctx.clock.now();
        ctx.out(renderTable(['ID', 'TOOL', 'REV', 'CLIENT', 'TARGET', 'CREDENTIAL', 'AGE', 'FLAGS'], cards.map((c) => cardRow(c, now))));
      }
    });

  approvals
    .command('show <id>')
    .description('show every field of one pending approval')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const ctx = contextFor(cmd);
      const card = await withOperator(ctx, deps, async (c) => resolveCard(await c.request('approvals.list'), id));
      const d = cardDetails(card);
      for (const line of d.lines) ctx.out(line);
      if (d.hidden > 0) ctx.out(`(${d.hidden} characters not shown: this call can only be approved once)`);
    });

  approvals
    .command('approve <id>')
    .description('approve a pending call once (or for the rest of its session with --session)')
    .option('--session', 'approve this tool for the rest of the agent session (not offered for widening calls)')
    .option('--digest <digest>', 'the call digest you checked in `approvals show` (in full, or its first 12+ characters); refused if the call differs')
    .action(async (id: string, o: { session?: boolean; digest?: string }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const line = await withOperator(ctx, deps, async (c) => {
        const card = resolveCard(await c.request('approvals.list'), id);
        if (o.session === true && cardDetails(card).hidden > 0) {
          throw new PosternError('USAGE', 'this call has values too long to show in full: approve it once, not for the session');
        }
        const d = await c.request('approvals.decide', { approval_id: card.id, verdict: approveVerdict(card, o) });
        return describeDecision(card, d);
      });
      ctx.out(line);
    });

  approvals
    .command('deny <id>')
    .description('deny a pending call')
    .option('--reason <text>', 'a reason passed to the agent (at most 500 characters)')
    .action(async (id: string, o: { reason?: string }, cmd: Command) => {
      const ctx = contextFor(cmd);
      if (o.reason !== undefined && o.reason.length > 500) throw new PosternError('USAGE', '--reason is limited to 500 characters');
      const line = await withOperator(ctx, deps, async (c) => {
        const card = resolveCard(await c.request('approvals.list'), id);
        const d = await c.request('approvals.decide', { approval_id: card.id, verdict: { verdict: 'deny', reason: o.reason ?? null } });
        return describeDecision(card, d);
      });
      ctx.out(line);
    });
}
