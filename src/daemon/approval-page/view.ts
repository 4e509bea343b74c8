/**
 * What the approval page shows, as JSON for its script: the pending cards,
 * each as the rows of the one card view (src/protocol/operator/card-view.ts,
 * the rows `postern approvals show` prints and the TUI draws), plus what may
 * be done with it and a fresh decision nonce, and the recent activity.
 *
 * Invariants: every string that comes from a card or the journal is already
 * sanitized here by the terminal-text rules (control, bidi, zero-width and
 * other invisible characters visibly escaped), and the page only ever sets
 * it as text; labels are Postern's own; a stale card offers deny only; a
 * session grant is offered exactly when the card view offers it.
 */
import type { ApprovalCard } from '../../protocol/approvals.js';
import { cardView, type RowTone, type ActivityView } from '../../protocol/operator/index.js';
import { sanitizeForTerminal as clean } from '../../rules/terminal-text.js';

export interface PageRow {
  readonly label: string;
  readonly value: string;
  readonly tone: RowTone;
}

export interface PageCard {
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
  readonly rows: readonly PageRow[];
  readonly approve: { readonly once: boolean; readonly session: boolean; readonly why: string | null };
}

export interface PageActivity {
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
  readonly cards: readonly PageCard[];
  readonly activity: readonly PageActivity[];
  /** Every paired device (revoked ones too), for the page to list and revoke. */
  readonly devices: readonly { readonly id: string; readonly name: string; readonly paired_at: string; readonly revoked_at: string | null }[];
}

export function pageCard(card: ApprovalCard, stale: string | undefined, nonce: string): PageCard {
  const view = cardView(card);
  const staleWhy = stale === undefined ? null : clean(stale, 300);
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
    rows: view.rows.map((r) => ({ label: r.label, value: r.value, tone: r.tone })),
    approve:
      staleWhy !== null
        ? { once: false, session: false, why: 'approval is not offered: the contract changed while the call waited (stale)' }
        : { once: true, session: view.sessionApproval.offered, why: view.sessionApproval.offered ? null : view.sessionApproval.why },
  };
}

export function pageActivity(a: ActivityView): PageActivity {
  return { at: a.at, tool: clean(a.tool, 80), status: clean(a.status, 40), decision: clean(a.decision ?? '-', 40), error_code: clean(a.error_code ?? '', 64) };
}
