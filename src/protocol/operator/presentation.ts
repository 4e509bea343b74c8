/**
 * What "the operator has seen this card" means, for every surface (TUI, CLI,
 * approval page) and for the daemon that checks it. The one home of the rule.
 *
 * A card's presentation is the sentence of what will happen, the summary of
 * every argument, and every row of the card view (../display/card-view.ts) unfolded:
 * sanitized by the terminal-text rules, nothing cut. Its canonical text is
 * one `label<TAB>value` line per row (sanitized values hold no raw tab or
 * newline), and its presentation digest is the SHA-256 of that text, hex.
 *
 * A card needs to be seen (`needsSeen`) when it cannot be shown whole in one
 * view: a value the standard card view folds (over CARD_VALUE_MAX
 * characters), a presentation over PRESENTATION_CHARS_MAX characters, or
 * over PRESENTATION_ROWS_MAX rows. Such a card is approved — once or for the
 * session — only by a verdict whose `seen.presentation` is this card's
 * presentation digest (`checkSeen`, called by the approval queue, the path
 * every surface's decision takes), so a surface that forgets the rule is
 * refused APPROVAL_UNSEEN, with nothing run. A surface sends that digest only
 * after it has had every part of the presentation on screen (the TUI: every
 * row of its details; the page: every chunk in the viewport; the CLI: the
 * digest prefix `approvals show` printed next to the whole presentation).
 * A `seen` that names another presentation is refused even for a small card.
 */
import { createHash } from 'node:crypto';
import type { ApprovalCard, OperatorVerdict } from '../approvals.js';
import { PosternError } from '../../rules/errors.js';
import { CARD_VALUE_MAX, cardView, type CardRow } from '../display/card-view.js';

/** A presentation longer than this (characters over all rows) cannot be taken in at one view. */
const PRESENTATION_CHARS_MAX = 6_000;
/** A presentation with more rows than this cannot be taken in at one view. */
const PRESENTATION_ROWS_MAX = 40;
/** The fewest hex characters of a presentation digest a person may give to name it (`approvals approve --digest`). */
export const PRESENTATION_PREFIX_MIN = 8;
/** The label of the sentence row. */
const SENTENCE_LABEL = 'what';

export interface Presentation {
  /** Every row, whole: the sentence, the argument summary, then the card view's rows. */
  readonly rows: readonly CardRow[];
  /** One `label<TAB>value` line per row. */
  readonly text: string;
  /** SHA-256 of `text`, hex. */
  readonly digest: string;
  /** The card cannot be shown whole in one view: approving it needs `seen` with `digest`. */
  readonly needsSeen: boolean;
  /** Characters of all values. */
  readonly chars: number;
}

/** Presentations already made, per card object (a card is never changed once made: a new one is a new object). */
const made = new WeakMap<ApprovalCard, Presentation>();

/** The card's full presentation (every row unfolded) and its digest. */
export function presentation(card: ApprovalCard): Presentation {
  const known = made.get(card);
  if (known !== undefined) return known;
  const p = makePresentation(card);
  made.set(card, p);
  return p;
}

function makePresentation(card: ApprovalCard): Presentation {
  const whole = cardView(card, { maxValue: Number.POSITIVE_INFINITY });
  const rows: CardRow[] = [{ label: SENTENCE_LABEL, value: whole.sentence, hidden: 0, tone: 'normal' }, whole.summary, ...whole.rows];
  const text = rows.map((r) => `${r.label}\t${r.value}`).join('\n');
  const chars = rows.reduce((n, r) => n + r.value.length, 0);
  const folded = cardView(card, { maxValue: CARD_VALUE_MAX }).hidden > 0;
  const needsSeen = folded || chars > PRESENTATION_CHARS_MAX || rows.length > PRESENTATION_ROWS_MAX;
  return { rows, text, digest: createHash('sha256').update(text, 'utf8').digest('hex'), needsSeen, chars };
}

/** True when the card cannot be shown whole in one view (see the module header). */
export function needsSeen(card: ApprovalCard): boolean {
  return presentation(card).needsSeen;
}

/**
 * The daemon's check of an approval: throws APPROVAL_UNSEEN when the card
 * needs to be seen and the verdict does not name its presentation, or when
 * the verdict names another presentation. A denial is never held back.
 */
export function checkSeen(card: ApprovalCard, verdict: OperatorVerdict): void {
  if (verdict.verdict !== 'approve') return;
  const p = presentation(card);
  const named = verdict.seen?.presentation;
  if (named !== undefined && named !== p.digest) {
    throw new PosternError('APPROVAL_UNSEEN', 'the approval names a presentation that is not this card\'s: show the card again, then approve; nothing was approved');
  }
  if (p.needsSeen && named === undefined) {
    throw new PosternError('APPROVAL_UNSEEN', 'this card is too large for one view and the approval does not say all of it was seen: display every part of it, then approve; nothing was approved');
  }
}

/** The presentation digest a prefix names, or null (too short, not hex, or another digest). */
export function matchPresentationPrefix(p: Presentation, given: string): string | null {
  const g = given.trim().toLowerCase();
  if (g.length < PRESENTATION_PREFIX_MIN || !/^[0-9a-f]+$/.test(g)) return null;
  return p.digest.startsWith(g) ? p.digest : null;
}
