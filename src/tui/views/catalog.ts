/**
 * The catalog-changes view: the classified diff of a catalog waiting to be
 * adopted (one change a row, sanitized: the catalog is untrusted text), the
 * release gate and any alarm, with accept and reject for an operator.
 * Accepting is refused here, with the reason, when the gate failed or the
 * file does not parse; the daemon refuses it too.
 */
import type { CatalogChangeView, CatalogPendingView } from '../contract.js';
import { sanitizeForTerminal } from '../../rules/terminal-text.js';
import { line, type Line, type Tone } from '../lines.js';
import { clipCells, fieldRows } from '../text.js';
import type { ViewCtx } from '../ui.js';
import { NO_CURSOR, windowRows } from './list.js';

const CLASS_LABEL: Readonly<Record<CatalogChangeView['class'], string>> = {
  additive: 'added',
  bounded_migration: 'migration',
  breaking: 'BREAKING',
  behavior_change: 'behaviour',
  authority_widening: 'WIDENS',
  removal: 'REMOVED',
  semantic_change: 'semantics',
  metadata: 'metadata',
};

const DANGER_CLASSES: ReadonlySet<string> = new Set(['authority_widening', 'breaking', 'removal', 'semantic_change', 'behavior_change']);

/** Why the pending catalog cannot be accepted, or null. */
export function acceptBlocked(p: CatalogPendingView): string | null {
  if (p.invalid !== null) return `cannot accept: the catalog file is invalid (${sanitizeForTerminal(p.invalid, 120)})`;
  if (!p.gate.ok) return `cannot accept: the release gate failed (${p.gate.failures.length} failure(s))`;
  return null;
}

function rev(n: number | null): string {
  return n === null ? '-' : `r${n}`;
}

export function catalogView(ctx: ViewCtx): { lines: Line[]; disabled: string[] } {
  const w = ctx.width;
  const p = ctx.state.catalog;
  if (p === null) return { lines: [line('No catalog change is waiting.', 'dim')], disabled: [] };
  const lines: Line[] = [
    line(clipCells(`Pending catalog ${p.digest.slice(0, 16)} · ${p.tools} tool(s) · ${p.changes.length} change(s)`, w), 'title'),
  ];
  const push = (label: string, value: string, tone: Tone, maxRows = 3): void => {
    for (const r of fieldRows(label, value, w, maxRows).rows) lines.push([{ text: r, tone }]);
  };
  if (p.alarm !== null) push('ALARM', p.alarm, 'danger');
  if (p.invalid !== null) push('INVALID', p.invalid, 'danger');
  if (p.widening) for (const r of p.widening_reasons) push('WIDENS', r, 'danger', 2);
  for (const f of p.gate.failures) push('gate', f, 'danger', 2);
  if (p.baseline_digest === null) push('baseline', 'none trusted: every tool is new', 'warn');
  const rows: Line[] = [];
  for (const c of p.changes) {
    const tone: Tone = DANGER_CLASSES.has(c.class) ? 'danger' : c.class === 'metadata' ? 'dim' : 'plain';
    const value = `${c.tool} ${rev(c.from)}→${rev(c.to)} [${c.aspect}] ${c.reasons.join('; ')}`;
    for (const r of fieldRows(CLASS_LABEL[c.class], value, w - NO_CURSOR.length, 4).rows) rows.push([{ text: r, tone }]);
  }
  if (rows.length === 0) lines.push(line('No tool changes.', 'dim'));
  lines.push(...windowRows(rows, ctx.ui.cursor.catalog, ctx.height - lines.length, w));
  const blocked = acceptBlocked(p);
  return { lines, disabled: !ctx.observe && !ctx.state.locked && blocked !== null ? [blocked] : [] };
}
