/**
 * `postern catalog check --shadow`: the divergence of a candidate catalog
 * that ran in shadow, per tool, from the verdicts journaled with each call
 * (src/daemon/pipeline/stages/planning/shadow.ts). The gate fails when a tool diverges on
 * more than 1% of its shadowed calls (seed 004: "si el shadow reporta más de
 * un 1% de divergencia, el schema vuelve a diseño"), and when no call was
 * shadowed at all: `--shadow` asks for evidence, and none is not a pass.
 * Pure: the caller passes the journal's call heads in.
 */
import { ShadowVerdicts, type CallHead, type ShadowVerdict } from '../journal/index.js';
import { renderTable } from './table.js';
import { sanitizeForTerminal as clean } from '../rules/terminal-text.js';

/** The highest divergence rate that passes. */
const SHADOW_THRESHOLD = 0.01;

interface ShadowToolReport {
  readonly tool: string;
  readonly shadowed: number;
  readonly divergent: number;
  readonly rate: number;
  readonly verdicts: Record<ShadowVerdict, number>;
  /** Error codes the candidate would have answered, with counts. */
  readonly would_fail: Record<string, number>;
  readonly ok: boolean;
}

export interface ShadowReport {
  readonly digest: string;
  readonly threshold: number;
  readonly shadowed: number;
  readonly ok: boolean;
  readonly tools: readonly ShadowToolReport[];
}

export function shadowReport(heads: Iterable<CallHead>, digest: string): ShadowReport {
  const by = new Map<string, { verdicts: Record<ShadowVerdict, number>; would_fail: Record<string, number> }>();
  for (const h of heads) {
    const s = h.call.shadow;
    if (s?.digest !== digest) continue;
    let t = by.get(h.call.tool);
    if (t === undefined) by.set(h.call.tool, (t = { verdicts: { same: 0, would_fail: 0, other_request: 0, new_approval: 0 }, would_fail: {} }));
    t.verdicts[s.verdict]++;
    if (s.verdict === 'would_fail') t.would_fail[s.error_code ?? 'unknown'] = (t.would_fail[s.error_code ?? 'unknown'] ?? 0) + 1;
  }
  const tools = [...by.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([tool, t]): ShadowToolReport => {
      const shadowed = ShadowVerdicts.reduce((n, v) => n + t.verdicts[v], 0);
      const divergent = shadowed - t.verdicts.same;
      const rate = shadowed === 0 ? 0 : divergent / shadowed;
      return { tool, shadowed, divergent, rate, verdicts: t.verdicts, would_fail: t.would_fail, ok: rate <= SHADOW_THRESHOLD };
    });
  const shadowed = tools.reduce((n, t) => n + t.shadowed, 0);
  return { digest, threshold: SHADOW_THRESHOLD, shadowed, ok: shadowed > 0 && tools.every((t) => t.ok), tools };
}

export function renderShadowReport(r: ShadowReport): string {
  if (r.shadowed === 0) return `Shadow: no call was planned in shadow against ${r.digest.slice(0, 16)}… (start it with \`postern catalog shadow start\`): not shown safe.`;
  const table = renderTable(
    ['TOOL', 'SHADOWED', 'DIVERGENT', 'RATE', 'WOULD FAIL', 'OTHER REQUEST', 'NEW APPROVAL', 'GATE'],
    r.tools.map((t) => [
      clean(t.tool, 64),
      String(t.shadowed),
      String(t.divergent),
      `${(t.rate * 100).toFixed(1)}%`,
      String(t.verdicts.would_fail) + (t.verdicts.would_fail === 0 ? '' : ` (${Object.entries(t.would_fail).map(([c, n]) => `${c} ${n}`).join(', ')})`),
      String(t.verdicts.other_request),
      String(t.verdicts.new_approval),
      t.ok ? 'ok' : `FAIL (> ${r.threshold * 100}%)`,
    ]),
  );
  return `Shadow of ${r.digest.slice(0, 16)}…: ${r.shadowed} call(s) planned against it with no effect.\n${table}`;
}
