/**
 * The pending-approvals view: the queue ("N of M", oldest first or by
 * session, with a count per session) and the card on screen. Which deciding
 * keys are offered, and why one is not, is decided here in one place
 * (`offers`), so the key bar, the help and the reducer cannot disagree.
 *
 * Invariants: the card shown is the one the operator is on (ui.focusId, kept
 * by focus.ts); a card resolved elsewhere stays named on screen with what
 * happened to it until the operator moves; an observer is offered no
 * deciding key at all; nothing is offered while the decision pause runs; no
 * approval is offered for a card the operator has not seen whole — the
 * compact card shows all of it (and the card is not one the seen rule
 * holds: presentation.ts), or every row of the details has been on screen
 * (ui.coverage and ui.seen, kept by the reducer); the reason then says how
 * many rows are still unseen.
 */
import { presentation, type ApprovalCard, type ApprovalDecision, type CardView } from '../contract.js';
import { cardRows, countdown } from '../card.js';
import { cover, coverageFor, coveredRows, complete, type Coverage } from '../coverage.js';
import { focusedCard, paused, queue } from './focus.js';
import { line, type Line } from '../lines.js';
import { cellWidth, cutCells, sanitizeForTerminal } from '../../rules/terminal-text.js';
import { clipCells, foldCells } from '../text.js';
import type { ViewCtx } from '../ui.js';

type Offer = { readonly ok: true } | { readonly ok: false; readonly reason: string; readonly pause?: true };

export interface Offers {
  readonly approveOnce: Offer;
  readonly approveSession: Offer;
  readonly deny: Offer;
}

const yes: Offer = { ok: true };
const no = (reason: string): Offer => ({ ok: false, reason });
/** Why nothing is decided while the daemon is locked (the grants and catalog keys say it too). */
export const LOCKED_REASON = 'daemon locked: nothing can be decided until it is unlocked';
const PAUSE_REASON = 'deciding waits a moment: the card on screen just changed';
/** Why approving waits for the operator to read the rest of the card (the start of the reason). */
export const UNSEEN_REASON = 'approval is not offered until every row is seen';

/** The reason, saying what is left: `unseen` rows of `total` in the details (null: the details were never opened at this width). */
function unseenReason(unseen: number | null, total: number | null): string {
  if (unseen === null || total === null) return `${UNSEEN_REASON}: x opens the details`;
  return `${UNSEEN_REASON}: ${unseen}/${total} rows unseen, Space pages`;
}

/** What the card on screen shows: its view, whether no value is cut, and whether the operator has seen all of it. */
export interface Shown {
  readonly fullyShown: boolean;
  readonly seen: boolean;
  readonly view: CardView;
  /** The rows of the details not yet on screen, and how many there are (null: not counted at this width yet). */
  readonly unseen: { readonly rows: number; readonly total: number } | null;
}

/** What may be done with the card on screen, and why not. */
export function offers(ctx: ViewCtx, card: ApprovalCard | null, shown: Shown | null): Offers {
  const blocked = (r: Offer): Offers => ({ approveOnce: r, approveSession: r, deny: r });
  if (ctx.observe) return blocked(no('observer (read-only): deciding is disabled'));
  if (card === null) return blocked(no('no card on screen'));
  if (ctx.state.connection !== 'open') return blocked(no('not connected to the daemon'));
  if (ctx.state.locked) return blocked(no(LOCKED_REASON));
  if (ctx.ui.inflight[card.id] !== undefined) return blocked(no('a decision for this card is being sent'));
  if (countdown(card, ctx.nowMs).expired) return blocked(no('this request has expired'));
  if (paused(ctx.ui, ctx.monoMs)) return blocked({ ok: false, reason: PAUSE_REASON, pause: true });
  const stale = ctx.state.stale[card.id];
  if (stale !== undefined) {
    const r = no('approval is not offered: the contract changed while the call waited (stale)');
    return { approveOnce: r, approveSession: r, deny: yes };
  }
  const once: Offer = shown?.seen === true ? yes : no(unseenReason(shown?.unseen?.rows ?? null, shown?.unseen?.total ?? null));
  let session: Offer = yes;
  const sa = shown?.view.sessionApproval;
  if (sa === undefined) session = no('session approval is not offered: the card is not shown');
  else if (!sa.offered) session = no(sa.why);
  else if (shown?.fullyShown !== true) session = no('session approval is not offered: the card is not fully shown (x: details)');
  else if (!once.ok) session = once;
  return { approveOnce: once, approveSession: session, deny: yes };
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

/**
 * The count per session, as many as fit in `room` cells: a client name cut
 * with "…" (never "+N more", which would run into the count), and the
 * sessions that did not fit counted at the end.
 */
function perSession(pending: readonly ApprovalCard[], room: number): string {
  const counts = new Map<string, { name: string; n: number }>();
  for (const c of pending) {
    const cur = counts.get(c.session.id);
    const name = cutCells(sanitizeForTerminal(c.session.client_name ?? c.session.id.slice(0, 8), 200), 16);
    counts.set(c.session.id, { name, n: (cur?.n ?? 0) + 1 });
  }
  const all = [...counts.values()].map((v) => `${v.name} ${v.n}`);
  const shown: string[] = [];
  for (const [i, s] of all.entries()) {
    const rest = all.length - i - 1;
    const tail = rest === 0 ? '' : ` · +${rest} more sessions`;
    if (cellWidth([...shown, s].join(' · ') + tail) > room) {
      shown.push(`+${all.length - i} more sessions`);
      break;
    }
    shown.push(s);
  }
  return shown.join(' · ');
}

export interface ApprovalsView {
  readonly lines: Line[];
  /** Why a deciding key is not offered (the first is shown above the key bar). */
  readonly disabled: string[];
  readonly card: ApprovalCard | null;
  readonly offers: Offers;
  readonly fullyShown: boolean;
  /** The details are open and their last row is on screen. */
  readonly atEnd: boolean;
  /** The details are open: the rows [from, to) of `total` are on screen at this width (what the reducer records as covered). */
  readonly drawn: { readonly from: number; readonly to: number; readonly total: number; readonly width: number } | null;
  /** The furthest the details can scroll (0 in the compact card). */
  readonly maxScroll: number;
}

function queueHead(ctx: ViewCtx, q: readonly ApprovalCard[], idx: number): string {
  const { state, ui } = ctx;
  const order = ui.bySession ? 'by session' : 'oldest first';
  const filter = ui.filter.approvals === '' ? '' : ` · filter ${sanitizeForTerminal(ui.filter.approvals, 60)} (${state.pending.length} waiting)`;
  const head = `Approval ${idx + 1} of ${q.length} · ${order} · `;
  return `${head}${perSession(q, ctx.width - cellWidth(head) - cellWidth(filter))}${filter}`;
}

export function approvalsView(ctx: ViewCtx): ApprovalsView {
  const { state, ui, width, height } = ctx;
  const lines: Line[] = [];
  const q = queue(state, ui);
  const card = focusedCard(state, ui);
  if (card === null) {
    const gone = ui.focusId === null ? undefined : state.resolved[ui.focusId];
    if (gone !== undefined) {
      lines.push(line(clipCells(`The request on screen was ${describeDecision(gone)}.`, width), 'warn'));
      lines.push(line(clipCells(q.length > 0 ? `${q.length} still waiting: press n for the next.` : 'Nothing else is waiting.', width), 'dim'));
    } else if (state.pending.length > 0) {
      lines.push(line(clipCells(`No waiting call matches the filter ${sanitizeForTerminal(ui.filter.approvals, 60)} (${state.pending.length} waiting; Esc clears it).`, width), 'dim'));
    } else {
      lines.push(line('No calls are waiting for approval.', 'dim'));
    }
    return { lines, disabled: [], card, offers: offers(ctx, null, null), fullyShown: false, atEnd: false, maxScroll: 0, drawn: null };
  }
  lines.push(line(clipCells(queueHead(ctx, q, q.indexOf(card)), width), 'title'));
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
  const room = Math.max(1, height - lines.length);
  const body = ui.expanded ? detailsBody(ctx, card, room) : compactBody(ctx, card, room);
  lines.push(...body.lines);
  const o = offers(ctx, card, body.shown);
  const disabled = [...new Set([o.approveOnce, o.approveSession, o.deny].flatMap((x) => (x.ok ? [] : [x.reason])))];
  return { lines, disabled: ctx.observe ? [] : disabled, card, offers: o, fullyShown: body.shown.fullyShown, atEnd: body.atEnd, maxScroll: body.maxScroll, drawn: body.drawn };
}

interface Body {
  readonly lines: Line[];
  readonly shown: Shown;
  readonly atEnd: boolean;
  readonly maxScroll: number;
  readonly drawn: ApprovalsView['drawn'];
}

/** The compact card shows the card whole when nothing in it is cut, it fits, and the seen rule does not hold the card. */
function compactWhole(ctx: ViewCtx, card: ApprovalCard, room: number): boolean {
  const compact = cardRows(card, ctx.width, false);
  return compact.fullyShown && compact.lines.length <= room && !presentation(card).needsSeen;
}

/** What the details would count as unseen for this card at this width (null before they were ever drawn at it). */
function unseenOf(cov: Coverage | undefined, width: number): Shown['unseen'] {
  if (cov === undefined || cov.width !== width) return null;
  return { rows: cov.total - coveredRows(cov), total: cov.total };
}

function compactBody(ctx: ViewCtx, card: ApprovalCard, room: number): Body {
  const rows = cardRows(card, ctx.width, false);
  let body = rows.lines;
  let fullyShown = rows.fullyShown;
  if (body.length > room) {
    body = [...body.slice(0, room - 1), line(clipCells(`… +${rows.lines.length - room + 1} more rows (x: details)`, ctx.width), 'dim')];
    fullyShown = false;
  }
  const seen = compactWhole(ctx, card, room) || ctx.ui.seen[card.id] === true;
  return { lines: body, shown: { fullyShown, seen, view: rows.view, unseen: unseenOf(ctx.ui.coverage[card.id], ctx.width) }, atEnd: false, maxScroll: 0, drawn: null };
}

/** The details: the whole presentation, scrolled; the rows on screen count toward the card's coverage. */
function detailsBody(ctx: ViewCtx, card: ApprovalCard, room: number): Body {
  const { ui, width } = ctx;
  const rows = cardRows(card, width, true);
  const total = rows.lines.length;
  const maxScroll = total <= room ? 0 : total - room + 1;
  const from = Math.min(ui.scroll, maxScroll);
  const end = Math.min(total, from + room);
  let body = rows.lines.slice(from, end);
  if (end < total || from > 0) {
    body = body.slice(0, Math.max(0, room - 1));
    body.push(line(clipCells(`rows ${from + 1}–${from + body.length} of ${total} (j/k, Space/PgDn, g/G scroll)`, width), 'dim'));
  }
  const shownTo = from + (end < total || from > 0 ? Math.max(0, Math.min(end - from, room - 1)) : end - from);
  const cov = cover(coverageFor(ui.coverage[card.id], width, total), from, shownTo);
  const seen = compactWhole(ctx, card, room) || ui.seen[card.id] === true || complete(cov);
  const shown: Shown = { fullyShown: rows.fullyShown, seen, view: rows.view, unseen: { rows: total - coveredRows(cov), total } };
  return { lines: body, shown, atEnd: shownTo >= total, maxScroll, drawn: { from, to: shownTo, total, width } };
}
