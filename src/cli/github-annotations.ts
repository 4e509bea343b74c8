/**
 * `postern catalog check --format github`: the release gate's report as
 * GitHub Actions workflow commands (`::error file=…,line=…,title=…::message`),
 * so a catalog reviewed as a pull request shows each problem on the line it
 * is about.
 *
 * The one home of the escaping: a message's `%`, CR and LF, and a property's
 * also `:` and `,`, are percent-encoded as the runner expects, so nothing in
 * a catalog (a tool name, a description quoted in a reason) can end the
 * command early or start another one (`::set-env`, `::add-mask`…).
 */
import type { GateReport } from '../contracts/index.js';
import { catalogLineOf } from '../contracts/index.js';

type Level = 'error' | 'warning' | 'notice';

const data = (s: string): string => s.replaceAll('%', '%25').replaceAll('\r', '%0D').replaceAll('\n', '%0A');
const property = (s: string): string => data(s).replaceAll(':', '%3A').replaceAll(',', '%2C');

/** One workflow command line. */
export function workflowCommand(level: Level, at: { file: string; line?: number | undefined; title?: string }, message: string): string {
  const props = [`file=${property(at.file)}`, ...(at.line === undefined ? [] : [`line=${at.line}`]), ...(at.title === undefined ? [] : [`title=${property(at.title)}`])];
  return `::${level} ${props.join(',')}::${data(message)}`;
}

const link = (from: number | undefined, to: number | undefined): string => (from === undefined && to === undefined ? '' : ` r${from ?? '∅'} → r${to ?? '∅'}`);

/** Change classes an operator must look at: a warning on their line even when the gate passes. */
const NOTED = new Set(['authority_widening', 'breaking', 'behavior_change', 'removal', 'semantic_change', 'bounded_migration']);

/** The report as workflow commands: failures are errors, changes that need a look are warnings, then a notice with the verdict. */
export function gateAnnotations(report: GateReport, file: string, text: string): string[] {
  const lineOf = catalogLineOf(text, file);
  const out: string[] = [];
  for (const f of report.failures) {
    out.push(workflowCommand('error', { file, line: lineOf(f.tool, f.to ?? f.from), title: `release gate: ${f.rule}` }, `${f.tool}${link(f.from, f.to)}: ${f.message}`));
  }
  for (const h of report.historicalFailures) {
    out.push(workflowCommand('error', { file, line: lineOf(h.tool, h.revision), title: 'release gate: a past call no longer validates' }, `${h.tool}: journaled call #${h.index}: ${h.problem}`));
  }
  for (const c of report.changes) {
    if (!NOTED.has(c.class)) continue;
    const why = c.reasons.map((r) => r.text).join('; ');
    out.push(workflowCommand('warning', { file, line: lineOf(c.tool, c.to ?? c.from), title: `${c.class.replaceAll('_', ' ')} (${c.aspect})` }, `${c.tool}${link(c.from, c.to)}: ${why === '' ? c.class : why}`));
  }
  const n = report.failures.length + report.historicalFailures.length;
  out.push(workflowCommand(report.ok ? 'notice' : 'error', { file, title: 'postern catalog check' }, report.ok ? `the release gate passes (${report.changes.length} change${report.changes.length === 1 ? '' : 's'})` : `the release gate fails: ${n} problem${n === 1 ? '' : 's'}`));
  return out;
}

/** A catalog that does not parse: one error per issue, on its line when known. */
export function invalidCatalogAnnotations(file: string, issues: readonly string[]): string[] {
  return issues.map((i) => {
    const m = /\(line (\d+)\)$/.exec(i);
    return workflowCommand('error', { file, ...(m === null ? {} : { line: Number(m[1]) }), title: 'catalog invalid' }, i);
  });
}
