/**
 * What the approval page shows, as JSON for its script: the pending cards,
 * each as the rows of the one card view (src/protocol/display/card-view.ts,
 * the rows `postern approvals show` prints and the TUI draws), plus what may
 * be done with it and a fresh decision nonce, and the recent activity.
 *
 * Invariants: every string that comes from a card or the journal is already
 * sanitized here by the terminal-text rules (control, bidi, zero-width and
 * other invisible characters visibly escaped), and the page only ever sets
 * it as text; labels are Postern's own; a stale card offers deny only; a
 * session grant is offered exactly when the card view offers it. The rows are
 * the card's whole presentation (src/protocol/operator/presentation.ts: the
 * sentence of what will happen, the summary of every argument, then every
 * row, nothing cut), with its digest; a card the seen rule holds offers no
 * approval as such (`approve.once` false) — only once the page has had every
 * part of it in view (`approve.when_seen`), and the daemon checks the digest
 * the decision names.
 */
import type { ApprovalCard } from '../../protocol/approvals.js';
import { cardView, type RowTone } from '../../protocol/display/card-view.js';
import { presentation, type ActivityView } from '../../protocol/operator/index.js';
import { sanitizeForTerminal as clean } from '../../rules/terminal-text.js';

interface PageRow {
  readonly label: string;
  readonly value: string;
  readonly tone: RowTone;
}

interface PageCard {
  readonly id: string;
  readonly tool: string;
  readonly revision: string;
  readonly digest: string;
  readonly nonce: string;
  readonly requested_at: string;
  readonly expires_at: string;
  readonly widens: boolean;
  /** Why the card is stale (its contract changed while it waited), or null. */
  readonly stale: string | null;
  /** One sentence of what will happen (the card view's). */
  readonly sentence: string;
  /** The whole presentation: the sentence, the argument summary, then every row, nothing cut. */
  readonly rows: readonly PageRow[];
  /** The presentation's digest: what a decision names as seen. */
  readonly presentation: string;
  /** `required`: approving on the page needs a passkey's assertion over `presence_challenge` (presence.ts). */
  readonly presence: 'required' | 'none';
  /** The challenge (base64url) that binds the card's digest, the daemon run and this nonce; null when presence is not needed. */
  readonly presence_challenge: string | null;
  /** The card cannot be shown whole in one view: approving needs every part of it seen first. */
  readonly needs_seen: boolean;
  /**
   * What may be approved now (`once`, `session`), why not, and — for a card
   * the seen rule holds — what may be approved once every part was in view.
   */
  readonly approve: {
    readonly once: boolean;
    readonly session: boolean;
    readonly why: string | null;
    readonly when_seen: { readonly once: boolean; readonly session: boolean } | null;
  };
}

interface PageActivity {
  readonly at: string;
  readonly tool: string;
  readonly status: string;
  readonly decision: string;
  readonly error_code: string;
}

export interface PageState {
  readonly now: string;
  readonly device: { readonly id: string; readonly name: string };
  /** This daemon run's short code, as `postern approvals page status` and `pair` print it. */
  readonly run_fingerprint: string;
  /** Whether passkeys work at the address the page was opened on (localhost only), and this device's passkeys. */
  readonly presence: { readonly available: boolean; readonly why: string | null; readonly passkeys: readonly { readonly id: string; readonly added_at: string }[] };
  readonly cards: readonly PageCard[];
  readonly activity: readonly PageActivity[];
  /** Every paired device (revoked ones too), for the page to list and revoke. */
  readonly devices: readonly { readonly id: string; readonly name: string; readonly paired_at: string; readonly revoked_at: string | null; readonly passkeys: number }[];
}

/** Why approving waits on the page: the card is larger than one view. */
const UNSEEN_WHY = 'this card is larger than one view: approval is offered once every part of it has been on screen (show all, then scroll through it)';

export function pageCard(card: ApprovalCard, stale: string | undefined, nonce: string, presenceChallenge: string): PageCard {
  const view = cardView(card);
  const p = presentation(card);
  const staleWhy = stale === undefined ? null : clean(stale, 300);
  const session = view.sessionApproval.offered;
  const sessionWhy = view.sessionApproval.offered ? null : view.sessionApproval.why;
  let approve: PageCard['approve'];
  if (staleWhy !== null) approve = { once: false, session: false, why: 'approval is not offered: the contract changed while the call waited (stale)', when_seen: null };
  else if (p.needsSeen) approve = { once: false, session: false, why: sessionWhy === null ? UNSEEN_WHY : `${UNSEEN_WHY}; ${sessionWhy}`, when_seen: { once: true, session } };
  else approve = { once: true, session, why: sessionWhy, when_seen: null };
  return {
    id: card.id,
    tool: clean(card.tool, 80),
    revision: `r${card.revision}`,
    digest: card.call_digest,
    nonce,
    requested_at: card.requested_at,
    expires_at: card.expires_at,
    widens: card.widening.length > 0,
    stale: staleWhy,
    sentence: view.sentence,
    rows: p.rows.map((r) => ({ label: r.label, value: r.value, tone: r.tone })),
    presentation: p.digest,
    presence: card.presence === 'required' ? 'required' : 'none',
    presence_challenge: card.presence === 'required' ? presenceChallenge : null,
    needs_seen: p.needsSeen,
    approve,
  };
}

export function pageActivity(a: ActivityView): PageActivity {
  return { at: a.at, tool: clean(a.tool, 80), status: clean(a.status, 40), decision: clean(a.decision ?? '-', 40), error_code: clean(a.error_code ?? '', 64) };
}
