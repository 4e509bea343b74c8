/**
 * Renders gate reports and catalog summaries for people (plain-text tables)
 * and for programs (JSON with a fixed, versioned shape and snake_case keys).
 * Text output escapes control, bidi and zero-width characters (journaled
 * arguments come from agents); JSON output keeps values exact.
 */
import { authorityDigest, authorityOf, type Authority } from '../authority/authority.js';
import type { Change } from '../change-vocabulary.js';
import { gateRuleFor, HistoricalSkips, type GateReport, type HistoricalSkip } from './release-gate.js';
import { escapeForTerminal as printable } from '../../rules/terminal-text.js';
import type { Catalog, JsonObject } from '../types.js';
import { describeRule } from '../authority/preapproval.js';

export const GATE_JSON_FORMAT = 'postern.release-gate/1';
export const CATALOG_JSON_FORMAT = 'postern.catalog-summary/1';

function table(header: readonly string[], rawRows: readonly (readonly string[])[]): string {
  const rows = rawRows.map((r) => r.map(printable));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => Math.min((r[i] ?? '').length, 60))));
  const line = (cells: readonly string[]): string =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0))).join('  ').trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

const revText = (c: Change): string =>
  c.from === undefined && c.to === undefined ? '-' : c.from === c.to || c.to === undefined ? `r${c.from ?? '?'}` : `r${c.from ?? '?'}→r${c.to}`;

export function renderGateReport(report: GateReport): string {
  const rows = report.changes.map((c) => [
    c.tool,
    revText(c),
    c.class,
    c.policy ?? '-',
    gateRuleFor(c) === undefined ? 'ok' : 'FAIL',
    c.reasons.map((r) => r.text).join('; '),
  ]);
  const parts = [rows.length === 0 ? 'No changes.' : table(['TOOL', 'REV', 'CLASS', 'POLICY', 'GATE', 'REASONS'], rows)];
  const h = report.historical;
  if (h.checked > 0) {
    parts.push(`Journal: ${h.checked} call(s) checked, ${h.passed} still valid, ${h.rejectedByPolicy} rejected by policy, ${h.skippedInvalid} were already invalid, ${report.historicalFailures.length} would now fail.`);
    const why = (Object.keys(HistoricalSkips) as HistoricalSkip[]).filter((k) => h.skipped[k] > 0).map((k) => `${h.skipped[k]} ${HistoricalSkips[k]}`);
    if (why.length > 0) parts.push(`  not revalidated: ${why.join('; ')}`);
    for (const f of report.historicalFailures.slice(0, 20)) parts.push(printable(`  #${f.index} ${f.tool} r${f.revision ?? '?'}: ${f.problem}`));
    if (report.historicalFailures.length > 20) parts.push(`  … and ${report.historicalFailures.length - 20} more`);
  }
  if (report.failures.length > 0) {
    parts.push(`Release gate FAILED (${report.failures.length}):`);
    for (const f of report.failures) parts.push(printable(`  - ${f.message}${f.reasons.length > 0 ? ` [${f.reasons.join('; ')}]` : ''}`));
  } else parts.push('Release gate passed.');
  return parts.join('\n');
}

export function gateReportJson(report: GateReport): JsonObject {
  return {
    format: GATE_JSON_FORMAT,
    ok: report.ok,
    changes: report.changes.map((c) => ({
      tool: c.tool,
      from: c.from ?? null,
      to: c.to ?? null,
      class: c.class,
      aspect: c.aspect,
      policy: c.policy ?? null,
      reasons: c.reasons.map((r) => ({ code: r.code, text: r.text })),
    })),
    failures: report.failures.map((f) => ({ rule: f.rule, tool: f.tool, from: f.from ?? null, to: f.to ?? null, message: f.message, reasons: [...f.reasons] })),
    historical: {
      checked: report.historical.checked,
      passed: report.historical.passed,
      rejected_by_policy: report.historical.rejectedByPolicy,
      skipped_invalid: report.historical.skippedInvalid,
      skipped: { ...report.historical.skipped },
    },
    historical_failures: report.historicalFailures.map((f) => ({
      index: f.index,
      tool: f.tool,
      revision: f.revision ?? null,
      problem: f.problem,
      issues: f.issues.map((i) => ({ field: i.field, problem: i.problem })),
    })),
  };
}

export interface ToolSummary {
  readonly tool: string;
  readonly revision: number;
  readonly revisions: readonly number[];
  readonly status: 'active' | 'retired';
  readonly effect: string;
  readonly approval: string;
  readonly authority: Authority;
  readonly authorityDigest: string;
}

export function summarizeCatalog(catalog: Catalog): ToolSummary[] {
  return [...catalog.tools.values()]
    .sort((a, b) => (a.name < b.name ? -1 : 1))
    .map((t) => {
      const authority = authorityOf(t, t.current, catalog);
      return {
        tool: t.name,
        revision: t.current.revision,
        revisions: t.revisions.map((r) => r.revision),
        status: t.current.retired === undefined ? 'active' : 'retired',
        effect: t.effect,
        approval: t.approval,
        authority,
        authorityDigest: authorityDigest(authority),
      };
    });
}

function reach(a: Authority): string {
  const parts: string[] = [];
  if (a.origins.length > 0) parts.push(`${a.methods.join(',')} ${a.origins.join(' ')} ${a.paths.join(' ')}`);
  if (a.requestMeaning.length > 0) parts.push(`overrides ${a.requestMeaning.join(', ')}`);
  if (a.privateNetwork === 'allowed') parts.push('(private network allowed)');
  for (const e of a.ssh) parts.push(`ssh ${e.user}@${e.host}:${e.port}`);
  for (const c of a.commands) parts.push(`argv ${c.join(' ')}`);
  if (a.programs.length > 1) parts.push(`programs ${a.programs.join(', ')}`);
  parts.push(`credential ${a.credentials.join(', ')}`);
  return parts.join('; ');
}

/** SSH targets and their host-key pins: an untrusted target runs nothing until `postern ssh trust`. */
function sshTargets(catalog: Catalog): { target: string; endpoint: string; host_key: string | null }[] {
  return [...catalog.targets.entries()].flatMap(([name, t]) =>
    t.kind === 'ssh' ? [{ target: name, endpoint: `${t.user}@${t.host}:${t.port}`, host_key: t.hostKey.state === 'pinned' ? t.hostKey.fingerprint : null }] : [],
  );
}

export function renderCatalogSummary(catalog: Catalog): string {
  const rows = summarizeCatalog(catalog).map((s) => [s.tool, `r${s.revision}`, s.status, s.effect, s.approval, reach(s.authority)]);
  const tools = rows.length === 0 ? 'No tools.' : table(['TOOL', 'REV', 'STATUS', 'EFFECT', 'APPROVAL', 'AUTHORITY'], rows);
  const ssh = sshTargets(catalog).map((t) => [t.target, t.endpoint, t.host_key ?? `untrusted: run \`postern ssh trust ${t.target}\``]);
  const rules = [...catalog.preapprovals.values()].map((r) => [r.name, describeRule(r)]);
  return [tools, ...(ssh.length === 0 ? [] : [table(['SSH TARGET', 'ENDPOINT', 'HOST KEY'], ssh)]), ...(rules.length === 0 ? [] : [table(['PRE-APPROVAL RULE', 'COVERS (unattended runs)'], rules)])].join('\n\n');
}

export function catalogSummaryJson(catalog: Catalog, digest: string): JsonObject {
  return {
    format: CATALOG_JSON_FORMAT,
    digest,
    tools: summarizeCatalog(catalog).map((s) => ({
      tool: s.tool,
      revision: s.revision,
      revisions: [...s.revisions],
      status: s.status,
      effect: s.effect,
      approval: s.approval,
      authority_digest: s.authorityDigest,
      authority: JSON.parse(JSON.stringify(s.authority)) as JsonObject,
    })),
    ssh_targets: sshTargets(catalog),
    // Only when there are rules: a catalog without them prints as before.
    ...(catalog.preapprovals.size === 0 ? {} : { preapprovals: [...catalog.preapprovals.values()].map((r) => ({ rule: r.name, tool: r.tool, budget: r.budget, covers: describeRule(r) })) }),
  };
}
