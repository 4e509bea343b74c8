/**
 * The sessions view: live sessions first, then past ones, each with the
 * grants it holds. Client names and versions come from the agent and are
 * sanitized like every other agent string.
 */
import type { SessionView } from '../contract.js';
import { line, type Line } from '../lines.js';
import type { ViewCtx } from '../ui.js';
import { NO_CURSOR, col, filterLine, matches, parseFilter, timeOf, windowRows } from './list.js';

export function visibleSessions(ctx: Pick<ViewCtx, 'state' | 'ui'>): SessionView[] {
  const f = parseFilter(ctx.ui.filter.sessions);
  const live = ctx.state.sessions.filter((s) => s.ended_at === null);
  const past = ctx.state.sessions.filter((s) => s.ended_at !== null);
  return [...live, ...past].filter((s) =>
    matches(f, { id: s.id, client: `${s.client_name ?? ''} ${s.client_version ?? ''}`, state: s.ended_at === null ? 'live' : 'ended' }),
  );
}

export function sessionsView(ctx: ViewCtx): { lines: Line[] } {
  const items = visibleSessions(ctx);
  const w = ctx.width;
  const lines: Line[] = [filterLine(ctx.ui.filter.sessions, items.length, ctx.state.sessions.length, w)];
  lines.push(line(`  ${col('state', 7)}${col('session', 14)}${col('client', 28)}${col('pid', 8)}${col('opened', 10)}grants`.slice(0, w), 'dim'));
  const rows: Line[] = [];
  for (const s of items) {
    const grants = ctx.state.grants.filter((g) => g.session_id === s.id);
    rows.push([
      { text: col(s.ended_at === null ? 'live' : 'ended', 7), tone: s.ended_at === null ? 'ok' : 'dim' },
      { text: `${col(s.id, 14)}${col(`${s.client_name ?? '?'} ${s.client_version ?? ''}`, 28)}${col(s.pid === null ? '-' : String(s.pid), 8)}${col(timeOf(s.started_at), 10)}${col(String(grants.length), Math.max(1, w - NO_CURSOR.length - 67))}` },
    ]);
    for (const g of grants) rows.push([{ text: `${' '.repeat(9)}↳ grant ${col(g.tool, 30)} r${g.revision}`, tone: 'dim' }]);
  }
  if (rows.length === 0) lines.push(line('No sessions.', 'dim'));
  lines.push(...windowRows(rows, ctx.ui.cursor.sessions, ctx.height - lines.length, w));
  return { lines };
}
