/**
 * The catalog-changes view: the classified diff of a catalog waiting to be
 * adopted, one change a row (sanitized: the catalog is untrusted text), with
 * accept and reject for an operator.
 */
import { sanitizeForTerminal } from '../../protocol/terminal-text.js';
import { line, type Line } from '../lines.js';
import { clipCells, fieldRows } from '../text.js';
import type { KeyHint, ViewCtx } from '../ui.js';
import { windowRows } from './list.js';

export function catalogView(ctx: ViewCtx): { lines: Line[]; hints: KeyHint[] } {
  const w = ctx.width;
  const pending = ctx.state.catalog;
  if (pending === null) return { lines: [line('No catalog change is waiting.', 'dim')], hints: [] };
  const lines: Line[] = [
    line(clipCells(`Pending catalog ${sanitizeForTerminal(pending.digest, 80)} · ${pending.changes.length} change(s)`, w), 'title'),
  ];
  const rows: Line[] = [];
  for (const c of pending.changes) {
    const tone = /widen|add|new/i.test(c.change) ? 'warn' : 'plain';
    for (const r of fieldRows(c.change, `${c.tool}: ${c.detail}`, w, 4).rows) rows.push([{ text: r, tone }]);
  }
  lines.push(...windowRows(rows, ctx.ui.cursor.catalog, ctx.height - lines.length, w));
  const hints: KeyHint[] = [{ key: 'j/k', label: 'move' }];
  if (!ctx.observe && !ctx.state.locked) hints.push({ key: 'A', label: 'accept' }, { key: 'R', label: 'reject' });
  return { lines, hints };
}
