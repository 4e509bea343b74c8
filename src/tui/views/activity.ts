/**
 * The activity view: a live tail of call records, newest at the bottom, the
 * cursor following the tail unless the operator moved up. Filters by
 * session, tool, status, decision, or `error` for failed calls only.
 */
import type { ActivityView } from '../contract.js';
import { line, type Line } from '../lines.js';
import type { ViewCtx } from '../ui.js';
import { NO_CURSOR, col, filterLine, matches, parseFilter, timeOf, windowRows } from './list.js';

function activityRecord(a: ActivityView): Record<string, string> {
  return {
    session: a.session_id ?? '-',
    tool: a.tool,
    status: a.status,
    decision: a.decision ?? '-',
    error: a.error_code ?? '',
    key: a.idempotency_key ?? '',
  };
}

export function visibleActivity(ctx: Pick<ViewCtx, 'state' | 'ui'>): ActivityView[] {
  const f = parseFilter(ctx.ui.filter.activity);
  const errorsOnly = f.words.includes('error');
  const rest = { fields: f.fields, words: f.words.filter((w) => w !== 'error') };
  return ctx.state.activity.filter((a) => (!errorsOnly || a.error_code !== null) && matches(rest, activityRecord(a)));
}

export function activityView(ctx: ViewCtx): { lines: Line[] } {
  const items = visibleActivity(ctx);
  const w = ctx.width;
  const lines: Line[] = [filterLine(ctx.ui.filter.activity, items.length, ctx.state.activity.length, w)];
  lines.push(line(`  ${col('time', 9)}${col('session', 11)}${col('tool', 22)}${col('status', 15)}${col('decision', 17)}error`.slice(0, w), 'dim'));
  const errW = Math.max(1, w - NO_CURSOR.length - 74);
  const rows: Line[] = items.map((a) => [
    { text: `${col(timeOf(a.at), 9)}${col(a.session_id ?? '-', 11)}${col(a.tool, 22)}` },
    { text: col(a.status, 15), tone: a.status === 'success' ? 'ok' : a.status === 'error' || a.status === 'outcome_unknown' ? 'danger' : 'plain' },
    { text: col(a.decision ?? '-', 17), tone: a.decision === 'denied' ? 'warn' : 'plain' },
    { text: col(a.error_code ?? '', errW), tone: 'danger' },
  ]);
  if (rows.length === 0) lines.push(line(ctx.state.activity.length === 0 ? 'No calls yet.' : 'Nothing matches the filter.', 'dim'));
  const cursor = ctx.ui.cursor.activity < 0 ? rows.length - 1 : ctx.ui.cursor.activity;
  lines.push(...windowRows(rows, cursor, ctx.height - lines.length, w));
  return { lines };
}
