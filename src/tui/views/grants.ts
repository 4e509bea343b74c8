/**
 * The grants view: every session grant in force (revoked with one key, for
 * an operator: keys/tables.ts).
 */
import type { GrantView } from '../contract.js';
import { line, type Line } from '../lines.js';
import type { ViewCtx } from '../ui.js';
import { NO_CURSOR, col, filterLine, matches, parseFilter, timeOf, windowRows } from './list.js';

export function visibleGrants(ctx: Pick<ViewCtx, 'state' | 'ui'>): GrantView[] {
  const f = parseFilter(ctx.ui.filter.grants);
  return ctx.state.grants.filter((g) => matches(f, { session: g.session_id, tool: g.tool, id: g.id }));
}

export function grantsView(ctx: ViewCtx): { lines: Line[] } {
  const items = visibleGrants(ctx);
  const w = ctx.width;
  const lines: Line[] = [filterLine(ctx.ui.filter.grants, items.length, ctx.state.grants.length, w)];
  lines.push(line(`  ${col('granted', 10)}${col('session', 14)}${col('tool', 36)}revision`.slice(0, w), 'dim'));
  const rows: Line[] = items.map((g) => [
    { text: `${col(timeOf(g.granted_at), 10)}${col(g.session_id, 14)}${col(g.tool, 36)}${col(`r${g.revision}`, Math.max(1, w - NO_CURSOR.length - 60))}` },
  ]);
  if (rows.length === 0) lines.push(line('No session grants.', 'dim'));
  lines.push(...windowRows(rows, ctx.ui.cursor.grants, ctx.height - lines.length, w));
  return { lines };
}
