/**
 * `postern approvals list|show|approve|deny|watch|report` — the operator's CLI on the
 * daemon's operator socket. The vault passphrase proves the operator: the
 * command opens the vault, copies its operator-auth key, locks the vault and
 * authenticates with that key (src/protocol/operator/connect.ts) — once per
 * command, and once for the whole of a `watch`.
 *
 * Invariants: every string taken from a card passes through
 * src/protocol/display/card-view.ts or sanitizeForTerminal (or
 * jsonForTerminal) before it is printed; `show` prints the card's whole
 * presentation (src/protocol/operator/presentation.ts: nothing cut) and its
 * digest, and `approve` needs a prefix of that digest (`--digest`, at least
 * PRESENTATION_PREFIX_MIN hex characters), so approving from here implies
 * having fetched the whole card; the approval is bound to the call digest of
 * the card the id resolved to and says which presentation was seen, so the
 * daemon refuses it if the call is not the one named; a session grant is
 * refused for a card that cannot be shown in full; ids may be given as a
 * unique prefix, never an ambiguous one.
 */
import { lstat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import type { Command } from 'commander';
import { examples } from '../help.js';
import { openVault } from '../../vault/index.js';
import { isPosternError, PosternError } from '../../rules/errors.js';
import { approvalNotFound } from '../../approvals/resolved.js';
import type { ApprovalCard, ApprovalDecision, OperatorVerdict } from '../../protocol/approvals.js';
import { cardView, targetSummary, type CardView } from '../../protocol/display/card-view.js';
import { OPERATOR_SOCKET_FILE, PRESENTATION_PREFIX_MIN, matchPresentationPrefix, presentation, type OperatorClient, type OperatorEventEnvelope, type OperatorRole } from '../../protocol/operator/index.js';
import { contextFor, type CliContext } from '../context.js';
import { NO_DAEMON_MESSAGE, connectOperator } from '../../protocol/operator/connect.js';
import { jsonForTerminal, sanitizeForTerminal as clean } from '../../rules/terminal-text.js';
import { renderTable } from '../table.js';
import { registerApprovalPage } from './approvals-page.js';

const SHORT_ID = 8;

export { targetSummary };

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
    const v = await openVault(ctx.paths.vault, pass, ctx.vault);
    try {
      return Uint8Array.from(v.deriveKey('operator-auth'));
    } finally {
      v.lock();
    }
  } finally {
    pass.fill(0);
  }
}

/** Runs `fn` on an authenticated connection; asks for the passphrase only if a socket exists (also used by `postern attach`). */
export async function withOperator<T>(ctx: CliContext, deps: ApprovalsDeps, fn: (c: OperatorClient) => Promise<T>, role: OperatorRole = 'operator'): Promise<T> {
  const socketPath = operatorSocketPath(ctx);
  try {
    await lstat(socketPath);
  } catch {
    throw new PosternError('DAEMON_UNAVAILABLE', NO_DAEMON_MESSAGE);
  }
  const key = await (deps.operatorKey ?? keyFromVault)(ctx);
  try {
    const conn = await connectOperator(socketPath, key, { role });
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

function cardRow(card: ApprovalCard, now: Date): string[] {
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

/** The full card, one field a line (src/protocol/display/card-view.ts); `hidden` counts characters that did not fit. */
function cardDetails(card: ApprovalCard): { lines: string[]; hidden: number; view: CardView } {
  const view = cardView(card);
  return { lines: view.rows.map((r) => `${r.label.padEnd(14)}${r.value}`), hidden: view.hidden, view };
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

/**
 * The pending card a full id or unique prefix names; when none is pending, APPROVAL_NOT_FOUND says
 * what became of it (expired, decided, withdrawn or unknown: the daemon remembers recent ones).
 */
async function pendingCard(c: OperatorClient, given: string): Promise<ApprovalCard> {
  try {
    return resolveCard(await c.request('approvals.list', {}), given);
  } catch (e) {
    if (!isPosternError(e, 'APPROVAL_NOT_FOUND') || given === '') throw e;
    const gone = await c.request('approvals.resolved', { prefix: given.slice(0, 200) });
    throw approvalNotFound(`${clean(given, 64)}`, gone.length === 1 ? gone[0]?.decision : undefined);
  }
}

/** The whole presentation, one row a line (`label  value`, nothing cut), and the digest `approve --digest` needs. */
function presentationLines(card: ApprovalCard): { lines: string[]; digest: string; needsSeen: boolean } {
  const p = presentation(card);
  return { lines: p.rows.map((r) => `${r.label.padEnd(14)}${r.value}`), digest: p.digest, needsSeen: p.needsSeen };
}

/**
 * The verdict for `approve`: bound to the card's call digest and naming its
 * presentation as seen — only when `given` is a prefix of that presentation's
 * digest (what `approvals show` printed). Throws USAGE without one,
 * APPROVAL_UNSEEN for a prefix of anything else.
 */
function approveVerdict(card: ApprovalCard, o: { session?: boolean; digest?: string }): OperatorVerdict {
  const short = clean(card.id.slice(0, SHORT_ID));
  if (o.digest === undefined || o.digest.trim() === '') {
    throw new PosternError('USAGE', `approve needs --digest: run \`postern approvals show ${short}\`, read the whole card, and give the first ${PRESENTATION_PREFIX_MIN}+ characters of the presentation digest it prints`);
  }
  const full = matchPresentationPrefix(presentation(card), o.digest);
  if (full === null) {
    throw new PosternError('APPROVAL_UNSEEN', `--digest ${clean(o.digest, 64)} is not (a ${PRESENTATION_PREFIX_MIN}+ character prefix of) this card's presentation digest: run \`postern approvals show ${short}\` again; nothing was approved`);
  }
  return { verdict: 'approve', scope: o.session === true ? 'session' : 'once', call_digest: card.call_digest, seen: { presentation: full } };
}

/** Prints the card's whole presentation (nothing cut) and its digest, as `approvals show` does; returns that digest. */
function printPresentation(ctx: CliContext, card: ApprovalCard): string {
  const p = presentationLines(card);
  for (const line of p.lines) ctx.out(line);
  if (!cardView(card).fullyShown) ctx.out('(values longer than a card folds are shown whole above: this call can only be approved once)');
  ctx.out(`presentation  sha256 ${p.digest}`);
  return p.digest;
}

/** Approves `card` under the seen rule (approveVerdict); a session grant only for a card a view shows in full. */
async function approveCard(c: OperatorClient, card: ApprovalCard, o: { session?: boolean; digest?: string }): Promise<string> {
  if (o.session === true && !cardView(card).fullyShown) {
    throw new PosternError('USAGE', 'this call has values too long to show in full: approve it once, not for the session');
  }
  const verdict = approveVerdict(card, o);
  const d = await c.request('approvals.decide', { approval_id: card.id, verdict });
  return describeDecision(card, d);
}

async function denyCard(c: OperatorClient, card: ApprovalCard, reason: string | null): Promise<string> {
  return describeDecision(card, await c.request('approvals.decide', { approval_id: card.id, verdict: { verdict: 'deny', reason } }));
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
  const approvals = program.command('approvals').description('list, approve and deny calls waiting for the operator (needs the vault passphrase)').addHelpText('after', examples([
    'postern approvals watch                  # one unlock: each card as it arrives, with the command that decides it',
    'postern approvals show 1a2b3c4d          # the whole card and its presentation digest',
    'postern approvals approve 1a2b3c4d --digest <first 12 of the digest>',
    'postern approvals review                 # one unlock: list, show and decide cards in a line-based loop',
    'postern attach                           # the terminal UI: review and decide many cards with one unlock',
  ]));
  registerApprovalPage(approvals, (ctx, fn) => withOperator(ctx, deps, fn));

  approvals
    .command('list')
    .description('list pending approvals')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const cards = await withOperator(ctx, deps, (c) => c.request('approvals.list', {}));
      if (o.json === true) ctx.out(jsonForTerminal(cards));
      else if (cards.length === 0) ctx.out('no pending approvals');
      else {
        const now = ctx.clock.now();
        ctx.out(renderTable(['ID', 'TOOL', 'REV', 'CLIENT', 'TARGET', 'CREDENTIAL', 'AGE', 'FLAGS'], cards.map((c) => cardRow(c, now))));
      }
    });

  approvals
    .command('report')
    .description('print this daemon run\'s report as JSON: calls made, what approved them (which pre-approval rule), what was denied and with which code, budgets used')
    .action(async (_o: unknown, cmd: Command) => {
      const ctx = contextFor(cmd);
      ctx.out(jsonForTerminal(await withOperator(ctx, deps, (c) => c.request('approvals.report', {}))));
    });

  approvals
    .command('show <id>')
    .description('show the whole card of one pending approval (nothing cut) and the presentation digest `approve --digest` needs')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const ctx = contextFor(cmd);
      const card = await withOperator(ctx, deps, (c) => pendingCard(c, id));
      const digest = printPresentation(ctx, card);
      ctx.out(`approve with: postern approvals approve ${clean(card.id.slice(0, SHORT_ID))} --digest ${digest.slice(0, 12)}`);
    });

  approvals
    .command('approve <id>')
    .description('approve a pending call once (or for the rest of its session with --session); needs --digest from `approvals show`')
    .option('--session', 'approve this tool for the rest of the agent session (not offered for widening calls)')
    .option('--digest <prefix>', `the presentation digest \`approvals show\` printed (its first ${PRESENTATION_PREFIX_MIN}+ hex characters); refused if the card differs`)
    .action(async (id: string, o: { session?: boolean; digest?: string }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const line = await withOperator(ctx, deps, async (c) => approveCard(c, await pendingCard(c, id), o));
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
        return denyCard(c, await pendingCard(c, id), o.reason ?? null);
      });
      ctx.out(line);
    });

  approvals
    .command('review')
    .description('one unlock, then a line-based loop on this terminal: list the pending cards, show one whole, approve (once or for the session) or deny it, and hear of new ones as they arrive')
    .action(async (_o: unknown, cmd: Command) => {
      const ctx = contextFor(cmd);
      if (process.stdin.isTTY !== true || process.stdout.isTTY !== true) {
        throw new PosternError('USAGE', '`approvals review` needs an interactive terminal: without one, use `postern approvals list`, `show ID` and `approve ID --digest PREFIX` (or `deny ID`)');
      }
      await withOperator(ctx, deps, (c) => review(ctx, c));
    });

  approvals
    .command('watch')
    .description('print each call waiting for approval as it arrives, and each decision, until Ctrl-C (one unlock for the whole watch)')
    .option('--observe', 'connect read-only (an observer cannot decide anything)')
    .action(async (o: { observe?: boolean }, cmd: Command) => {
      const ctx = contextFor(cmd);
      await withOperator(ctx, deps, (c) => watch(ctx, c), o.observe === true ? 'observer' : 'operator');
    });
}

function printCard(ctx: CliContext, card: ApprovalCard): void {
  const d = cardDetails(card);
  ctx.out(`--- waiting for approval: ${clean(card.id.slice(0, SHORT_ID))} ${clean(card.tool, 40)}${card.widening.length > 0 ? ' (WIDENS AUTHORITY)' : ''}`);
  for (const line of d.lines) ctx.out(`  ${line}`);
  const session = d.view.sessionApproval.offered ? ` (or --session)` : ` (${d.view.sessionApproval.why})`;
  const short = clean(card.id.slice(0, SHORT_ID));
  const p = presentationLines(card);
  // A card cut here is approved only after `show` printed it whole; a card shown whole here carries its digest.
  const approve = p.needsSeen || d.hidden > 0 ? `postern approvals show ${short}, then approve with the digest it prints` : `postern approvals approve ${short} --digest ${p.digest.slice(0, 12)}${session}`;
  ctx.out(`  decide: ${approve} | postern approvals deny ${short}`);
}

function describeResolution(card: ApprovalCard | undefined, id: string, d: ApprovalDecision): string {
  const what = `${clean(id.slice(0, SHORT_ID))}${card === undefined ? '' : ` (${clean(card.tool, 40)})`}`;
  switch (d.kind) {
    case 'approved':
      return `--- approved ${what} ${d.scope === 'session' ? 'for the session' : 'once'}, by ${clean(d.by, 40)}`;
    case 'denied':
      return `--- denied ${what}, by ${clean(d.by, 40)}${d.reason === null ? '' : `: ${clean(d.reason, 200)}`}`;
    case 'timeout':
      return `--- ${what} timed out: nobody decided in time`;
    case 'voided':
      return `--- ${what} voided: ${clean(d.reason, 200)}`;
    case 'cancelled':
      return `--- ${what} cancelled by the agent's client`;
  }
}

/** Prints the pending cards, then every card added and every resolution, until Ctrl-C or the daemon goes. */
async function watch(ctx: CliContext, c: OperatorClient): Promise<void> {
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const known = new Map<string, ApprovalCard>();
  const onEvent = (env: OperatorEventEnvelope): void => {
    const e = env.event;
    switch (e.type) {
      case 'approval.added':
        known.set(e.card.id, e.card);
        printCard(ctx, e.card);
        return;
      case 'approval.resolved':
        ctx.out(describeResolution(known.get(e.id), e.id, e.decision));
        known.delete(e.id);
        return;
      case 'approval.stale':
        ctx.out(`--- ${clean(e.id.slice(0, SHORT_ID))} is stale: ${clean(e.reason, 200)}`);
        return;
      case 'daemon.locked':
        ctx.out(`--- the daemon locked (${clean(e.reason, 200)}): pending approvals were voided`);
        return;
      case 'activity':
      case 'session.opened':
      case 'session.closed':
      case 'grant.added':
      case 'grant.revoked':
      case 'daemon.unlocked':
      case 'ship.problem':
      case 'catalog.adopted':
      case 'catalog.pending':
        return;
    }
  };
  try {
    const snap = await c.subscribe(onEvent, { signal: stop.signal });
    ctx.out(`watching for approvals as ${c.role} (${snap.pending.length} pending; Ctrl-C to stop)`);
    for (const card of snap.pending) {
      known.set(card.id, card);
      printCard(ctx, card);
    }
    const stopped = new Promise<null>((resolve) => stop.signal.addEventListener('abort', () => resolve(null), { once: true }));
    const err = await Promise.race([stopped, c.closed]);
    if (err !== null) throw err;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}

const REVIEW_KEYS = 'list | show N | n (next) | a [N] (approve once) | s [N] (for the session) | d [N] [reason] (deny) | r (refresh) | q (quit)';

/**
 * `approvals review`: the pending cards numbered (a number is never reused in
 * one review), `show N` prints the card whole as `approvals show` does and
 * remembers the presentation digest printed; `a`/`s` approve with that digest
 * (approveVerdict: the seen rule), so a card not shown here is refused
 * APPROVAL_UNSEEN; cards added or resolved meanwhile are announced.
 */
async function review(ctx: CliContext, c: OperatorClient): Promise<void> {
  const byNumber = new Map<number, ApprovalCard>();
  const numbers = new Map<string, number>();
  const shown = new Map<string, string>();
  const decidedHere = new Set<string>();
  let current: number | null = null;
  const numberOf = (card: ApprovalCard): number => {
    const n = numbers.get(card.id) ?? numbers.size + 1;
    numbers.set(card.id, n);
    byNumber.set(n, card);
    return n;
  };
  const forget = (id: string): ApprovalCard | undefined => {
    const n = numbers.get(id);
    const card = n === undefined ? undefined : byNumber.get(n);
    if (n !== undefined) byNumber.delete(n);
    shown.delete(id);
    if (current === n) current = null;
    return card;
  };
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: false, prompt: 'review> ' });
  const title = (n: number, card: ApprovalCard): string => `${n}: ${clean(card.id.slice(0, SHORT_ID))} ${clean(card.tool, 40)}${card.widening.length > 0 ? ' (WIDENS AUTHORITY)' : ''}`;
  const onEvent = (env: OperatorEventEnvelope): void => {
    const e = env.event;
    if (e.type === 'approval.added') {
      const n = numberOf(e.card);
      ctx.out(`--- new card ${title(n, e.card)}: \`show ${n}\` to read it`);
    } else if (e.type === 'approval.resolved') {
      const card = forget(e.id);
      if (decidedHere.delete(e.id)) return;
      ctx.out(describeResolution(card, e.id, e.decision));
    } else if (e.type === 'approval.stale') {
      ctx.out(`--- ${clean(e.id.slice(0, SHORT_ID))} is stale: ${clean(e.reason, 200)}`);
    } else if (e.type === 'daemon.locked') {
      ctx.out(`--- the daemon locked (${clean(e.reason, 200)}): pending approvals were voided`);
    } else return;
    rl.prompt();
  };
  const list = (): void => {
    const rows = [...byNumber].sort(([a], [b]) => a - b);
    if (rows.length === 0) ctx.out('no pending approvals (r refreshes; new cards are announced)');
    else {
      const now = ctx.clock.now();
      ctx.out(renderTable(['#', 'ID', 'TOOL', 'REV', 'CLIENT', 'TARGET', 'CREDENTIAL', 'AGE', 'FLAGS'], rows.map(([n, card]) => [String(n), ...cardRow(card, now)])));
    }
  };
  const pick = (arg: string | undefined): [number, ApprovalCard] => {
    const n = arg === undefined ? current : Number(arg);
    const card = n === null ? undefined : byNumber.get(n);
    if (n === null) throw new PosternError('USAGE', 'no card is open: `show N` first (`list` numbers them)');
    if (card === undefined) throw new PosternError('APPROVAL_NOT_FOUND', `no pending card ${clean(arg ?? String(n), 20)} in this review: \`list\` shows the pending ones`);
    return [n, card];
  };
  const show = (n: number, card: ApprovalCard): void => {
    ctx.out(`--- card ${title(n, card)}`);
    shown.set(card.id, printPresentation(ctx, card));
    current = n;
    const session = cardView(card).sessionApproval;
    ctx.out(`decide: a (approve once)${session.offered ? ' | s (for the session)' : ''} | d [reason] (deny) | n (next)${session.offered ? '' : ` — not for the session: ${session.why}`}`);
  };
  const decide = async (verb: string, args: string[]): Promise<void> => {
    const numbered = args[0] !== undefined && /^[0-9]+$/.test(args[0]);
    const [n, card] = pick(numbered ? args[0] : undefined);
    if (verb === 'd') {
      const reason = (numbered ? args.slice(1) : args).join(' ');
      if (reason.length > 500) throw new PosternError('USAGE', 'a reason is limited to 500 characters');
      decidedHere.add(card.id);
      ctx.out(await denyCard(c, card, reason === '' ? null : reason));
      return;
    }
    const digest = shown.get(card.id);
    if (digest === undefined) throw new PosternError('APPROVAL_UNSEEN', `card ${n} was not shown in full in this review: \`show ${n}\`, read it, then approve; nothing was approved`);
    decidedHere.add(card.id);
    ctx.out(await approveCard(c, card, { session: verb === 's', digest }).catch((e: unknown) => {
      decidedHere.delete(card.id);
      throw e;
    }));
  };
  const refresh = async (): Promise<void> => {
    const pending = await c.request('approvals.list', {});
    const ids = new Set(pending.map((card) => card.id));
    for (const id of [...numbers.keys()]) if (!ids.has(id)) forget(id);
    for (const card of pending) numberOf(card);
    list();
  };
  const step = async (line: string): Promise<boolean> => {
    const [verb = '', ...args] = line.trim().split(/\s+/);
    switch (verb) {
      case '':
        return true;
      case 'q':
      case 'quit':
        return false;
      case 'l':
      case 'list':
        list();
        return true;
      case 'r':
        await refresh();
        return true;
      case 'show':
        show(...pick(args[0]));
        return true;
      case 'n': {
        const next = [...byNumber.keys()].sort((a, b) => a - b).find((k) => current === null || k > current) ?? [...byNumber.keys()].sort((a, b) => a - b)[0];
        if (next === undefined) ctx.out('no pending approvals');
        else show(...pick(String(next)));
        return true;
      }
      case 'a':
      case 's':
      case 'd':
        await decide(verb, args);
        return true;
      default:
        ctx.out(/^[0-9]+$/.test(verb) ? 'to read a card: show N' : `commands: ${REVIEW_KEYS}`);
        return true;
    }
  };
  const stop = new AbortController();
  const onSignal = (): void => rl.close();
  process.once('SIGINT', onSignal);
  try {
    const snap = await c.subscribe(onEvent, { signal: stop.signal });
    for (const card of snap.pending) numberOf(card);
    ctx.out(`reviewing approvals (${snap.pending.length} pending); ${REVIEW_KEYS}`);
    list();
    const lost: { err: PosternError | null } = { err: null };
    void c.closed.then((err) => {
      lost.err = err;
      rl.close();
    });
    rl.prompt();
    for await (const line of rl) {
      try {
        if (!(await step(line))) break;
      } catch (e) {
        if (!isPosternError(e)) throw e;
        ctx.out(`${e.code}: ${e.message}`);
      }
      rl.prompt();
    }
    if (lost.err !== null) throw lost.err;
  } finally {
    process.removeListener('SIGINT', onSignal);
    stop.abort();
    rl.close();
  }
}
