/**
 * The pending-approvals view: the queue ("N of M", oldest first, with a count
 * per session) and the card on screen. Which deciding keys are offered, and
 * why one is not, is decided here in one place (`offers`), so the key bar,
 * the help and the key handler cannot disagree.
 *
 * Invariants: the card shown is the one the operator is on (ui.focusId); a
 * new arrival never replaces it; a card resolved elsewhere stays named on
 * screen with what happened to it until the operator moves; an observer is
 * offered no deciding key at all.
 */
import type { ApprovalCard, ApprovalDecision, CardView } from '../contract.js';
import { cardRows, countdown } from '../card.js';
import { line, type Line } from '../lines.js';
import { sanitizeForTerminal } from '../../rules/terminal-text.js';
import { clipCells, foldCells } from '../text.js';
import type { KeyHint, ViewCtx } from '../ui.js';

export interface Offer {
  readonly ok: boolean;
  /** Why the key is not offered (shown beside the key bar). */
  readonly reason: string | null;
}

export interface Offers {
  readonly approveOnce: Offer;
  readonly approveSession: Offer;
  readonly deny: Offer;
}

const yes: Offer = { ok: true, reason: null };
const no = (reason: string): Offer => ({ ok: false, reason });

export function focusedCard(ctx: Pick<ViewCtx, 'state' | 'ui'>): ApprovalCard | null {
  const id = ctx.ui.focusId;
  return id === null ? null : (ctx.state.pending.find((c) => c.id === id) ?? null);
}

export function focusIndex(ctx: Pick<ViewCtx, 'state' | 'ui'>): number {
  return ctx.state.pending.findIndex((c) => c.id === ctx.ui.focusId);
}

/** What may be done with the card on screen, and why not. */
export function offers(ctx: ViewCtx, card: ApprovalCard | null, shown: { fullyShown: boolean; view: CardView } | null): Offers {
  const blocked = (r: string): Offers => ({ approveOnce: no(r), approveSession: no(r), deny: no(r) });
  if (ctx.observe) return blocked('observer (read-only): deciding is disabled');
  if (card === null) return blocked('no card on screen');
  if (ctx.state.connection !== 'open') return blocked('not connected to the daemon');
  if (ctx.state.locked) return blocked('daemon locked: nothing can be decided until it is unlocked');
  if (ctx.ui.inflight[card.id] !== undefined) return blocked('a decision for this card is being sent');
  if (countdown(card, ctx.nowMs).expired) return blocked('this request has expired');
  const stale = ctx.state.stale[card.id];
  if (stale !== undefined) {
    const r = no('approval is not offered: the contract changed while the call waited (stale)');
    return { approveOnce: r, approveSession: r, deny: yes };
  }
  let session: Offer = yes;
  const sa = shown?.view.sessionApproval;
  if (sa === undefined) session = no('session approval is not offered: the card is not shown');
  else if (!sa.offered) session = no(sa.why);
  else if (shown?.fullyShown !== true) session = no('session approval is not offered: the card is not fully shown (x: details)');
  return { approveOnce: yes, approveSession: session, deny: yes };
}

export function describeDecision(d: ApprovalDecision): string {
  switch (d.kind) {
    case 'approved':
      return `approved ${d.scope === 'session' ? 'for the session' : 'once'} by ${sanitizeForTerminal(d.by, 40)}`;
    case 'denied':
      return `denied by ${sanitizeForTerminal(d.by, 40)}${d.reason === null ? '' : `: ${sanitizeForTerminal(d.reason, 120)}`}`;
    case 'timeout':
      return 'timed out';
    case 'voided':
      return `voided: ${sanitizeForTerminal(d.reason, 120)}`;
    case 'cancelled':
      return 'cancelled by the agent';
  }
}

function perSession(pending: readonly ApprovalCard[]): string {
  const counts = new Map<string, { name: string; n: number }>();
  for (const c of pending) {
    const cur = counts.get(c.session.id);
    const name = sanitizeForTerminal(c.session.client_name ?? c.session.id.slice(0, 8), 16);
    counts.set(c.session.id, { name, n: (cur?.n ?? 0) + 1 });
  }
  return [...counts.values()].map((v) => `${v.name} ${v.n}`).join(' · ');
}

export interface ApprovalsView {
  readonly lines: Line[];
  readonly hints: KeyHint[];
  readonly disabled: string[];
  readonly offers: Offers;
  readonly fullyShown: boolean;
  /** The furthest the details can scroll (0 in the compact card). */
  readonly maxScroll: number;
}

export function approvalsView(ctx: ViewCtx): ApprovalsView {
  const { state, ui, width, height } = ctx;
  const lines: Line[] = [];
  const card = focusedCard(ctx);
  const idx = focusIndex(ctx);
  const total = state.pending.length;
  const nav: KeyHint[] = [
    { key: 'n/j/↓', label: 'next' },
    { key: 'p/k/↑', label: 'previous' },
    { key: 'x', label: ui.expanded ? 'compact' : 'details' },
  ];
  if (card === null) {
    const gone = ui.focusId === null ? undefined : state.resolved[ui.focusId];
    if (gone !== undefined) {
      lines.push(line(clipCells(`The request on screen was ${describeDecision(gone)}.`, width), 'warn'));
      lines.push(line(clipCells(total > 0 ? `${total} still waiting: press n for the next.` : 'Nothing else is waiting.', width), 'dim'));
    } else {
      lines.push(line(clipCells(total === 0 ? 'No calls are waiting for approval.' : `${total} waiting: press n to show the next.`, width), 'dim'));
    }
    const o = offers(ctx, null, null);
    return { lines, hints: nav, disabled: [], offers: o, fullyShown: false, maxScroll: 0 };
  }
  const head = `Approval ${idx + 1} of ${total} · oldest first · ${perSession(state.pending)}`;
  lines.push(line(clipCells(head, width), 'title'));
  const cd = countdown(card, ctx.nowMs);
  const status: Line = [
    { text: cd.text, tone: cd.expired ? 'danger' : 'plain' },
    ...(state.stale[card.id] !== undefined ? [{ text: '  STALE ', tone: 'danger' as const }, { text: ` ${sanitizeForTerminal(state.stale[card.id] ?? '', 80)}`, tone: 'warn' as const }] : []),
    ...(card.widening.length > 0 ? [{ text: '  WIDENS AUTHORITY', tone: 'danger' as const }] : []),
    ...(ui.inflight[card.id] !== undefined ? [{ text: `  sending ${ui.inflight[card.id] ?? ''}…`, tone: 'warn' as const }] : []),
  ];
  lines.push(status);
  const err = ui.cardError[card.id];
  if (err !== undefined) for (const r of foldCells(`! ${sanitizeForTerminal(err, 300)}`, width)) lines.push(line(r, 'danger'));
  const rows = cardRows(card, width, ui.expanded);
  const room = Math.max(1, height - lines.length);
  let body = rows.lines;
  let fullyShown = rows.fullyShown;
  let maxScroll = 0;
  if (ui.expanded) {
    maxScroll = body.length <= room ? 0 : body.length - room + 1;
    const from = Math.min(ui.scroll, maxScroll);
    const end = Math.min(body.length, from + room);
    body = body.slice(from, end);
    if (end < rows.lines.length || from > 0) {
      body = body.slice(0, Math.max(0, room - 1));
      body.push(line(clipCells(`rows ${from + 1}–${from + body.length} of ${rows.lines.length} (j/k, Space/PgDn, g/G scroll)`, width), 'dim'));
    }
  } else if (body.length > room) {
    body = [...body.slice(0, room - 1), line(clipCells(`… +${rows.lines.length - room + 1} more rows (x: details)`, width), 'dim')];
    fullyShown = false;
  }
  lines.push(...body);
  const o = offers(ctx, card, { fullyShown, view: rows.view });
  const hints: KeyHint[] = [];
  if (!ctx.observe) {
    if (o.approveOnce.ok) hints.push({ key: 'a', label: 'approve once' });
    if (o.approveSession.ok) hints.push({ key: 's', label: 'approve for session' });
    if (o.deny.ok) hints.push({ key: 'd', label: 'deny' }, { key: 'r', label: 'deny with reason' });
  }
  hints.push(...nav);
  const disabled = [...new Set([o.approveOnce, o.approveSession, o.deny].filter((x) => !x.ok && x.reason !== null).map((x) => x.reason ?? ''))];
  return { lines, hints, disabled: ctx.observe ? [] : disabled, offers: o, fullyShown, maxScroll };
}
