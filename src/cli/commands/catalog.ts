/**
 * `postern catalog new|check|show|accept`: a starter file, the release gate
 * and staged adoption.
 * `check` needs no passphrase (it can run in a catalog's own CI); `accept`
 * does, because it authenticates the accepted digest with a key derived from
 * the vault — so an agent that edits catalog.yaml cannot widen its own reach.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import {
  catalogSummaryJson,
  gateReportJson,
  parseCatalog,
  releaseGate,
  renderCatalogSummary,
  renderGateReport,
  type Catalog,
  type GateReport,
  type HistoryRecord,
  verifyHistoryChain,
} from '../../contracts/index.js';
import { openVault } from '../../vault/index.js';
import { openJournals } from '../../journal/index.js';
import { PosternError } from '../../rules/errors.js';
import { alarmError, currentCatalogState, loadAcceptedCatalog, readAcceptance, readCatalogFile, readHistory } from '../../home/catalog-store.js';
import { acceptCatalog, type AcceptOpts } from './catalog-accept.js';
import { contextFor, type CliContext } from '../context.js';
import { examples } from '../help.js';
import { readDrain } from '../drain-journal.js';
import { retiredInUse, type RetiredInUse } from '../revision-drain.js';
import { sanitizeForTerminal as clean } from '../../rules/terminal-text.js';
import { withOperator } from './approvals.js';
import { renderShadowReport, shadowReport, type ShadowReport } from '../shadow-report.js';
import { STARTER_SECRET, writeStarterCatalog } from '../starter-catalog.js';
import { gateAnnotations, invalidCatalogAnnotations } from '../github-annotations.js';

async function loadCatalogFile(path: string, creds?: ReadonlySet<string>): Promise<{ catalog: Catalog; text: string; digest: string }> {
  const f = await readCatalogFile(path);
  if (f === undefined) throw new PosternError('CATALOG_NOT_FOUND', `no catalog at ${path}: \`postern catalog new\` writes a starter`);
  return { catalog: parseCatalog(f.text, path, creds), text: f.text, digest: f.digest };
}

/** History records from a JSONL file: one `{tool, revision?, raw_arguments}` per line. */
async function readHistoryFile(path: string): Promise<HistoryRecord[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    throw new PosternError('INPUT_INVALID', `cannot read ${path}`);
  }
  const out: HistoryRecord[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let v: unknown;
    try {
      v = JSON.parse(line);
    } catch {
      throw new PosternError('INPUT_INVALID', `${path}:${i + 1}: not JSON`);
    }
    const o = v as { tool?: unknown; revision?: unknown; raw_arguments?: unknown };
    if (typeof o.tool !== 'string' || !('raw_arguments' in o) || (o.revision !== undefined && o.revision !== null && typeof o.revision !== 'number')) {
      throw new PosternError('INPUT_INVALID', `${path}:${i + 1}: expected {"tool", "revision"?, "raw_arguments"}`);
    }
    out.push({ tool: o.tool, revision: typeof o.revision === 'number' ? o.revision : undefined, raw_arguments: o.raw_arguments });
  });
  return out;
}

/** Raw arguments the Activity journal recorded, with the code of each refusal (the gate skips calls that were never valid, and says so). */
function readHistoryJournal(ctx: CliContext): HistoryRecord[] {
  if (!existsSync(ctx.paths.journalDir)) return [];
  const j = openJournals(ctx.paths.journalDir, { readonly: true });
  try {
    const out: HistoryRecord[] = [];
    for (const r of j.activity.rawArgumentsByTool()) {
      out.push({ tool: r.tool, revision: r.revision ?? undefined, raw_arguments: r.raw_arguments, error_code: r.error_code });
    }
    return out;
  } finally {
    j.close();
  }
}

const WINDOW = /^([0-9]{1,4})([hd])$/;
const DEFAULT_WINDOW = '7d';

function parseWindow(v: string): number {
  const m = WINDOW.exec(v);
  if (m === null) throw new PosternError('USAGE', `--window takes an age in hours or days (e.g. 36h, 7d), got ${JSON.stringify(v).slice(0, 40)}`);
  return Number(m[1]) * (m[2] === 'h' ? 3_600_000 : 86_400_000);
}

/** Revisions the candidate retires that the journal shows in use within the window (or on a live session). */
function retirementsInUse(ctx: CliContext, old: Catalog | undefined, candidate: Catalog, windowMs: number): RetiredInUse[] {
  if (!existsSync(ctx.paths.journalDir)) return [];
  const j = openJournals(ctx.paths.journalDir, { readonly: true });
  try {
    const since = new Date(ctx.clock.now().getTime() - windowMs).toISOString();
    return retiredInUse(readDrain(j, old, { since }), old, candidate);
  } finally {
    j.close();
  }
}

function retirementLine(r: RetiredInUse, window: string): string {
  const live = r.live_sessions === 0 ? '' : `; ${r.live_sessions} live session${r.live_sessions === 1 ? ' is' : 's are'} on it`;
  return `warning: ${clean(r.tool, 64)} r${r.revision} is retired by this catalog but had ${r.calls} call${r.calls === 1 ? '' : 's'} in the last ${window} (last ${r.last_seen})${live}: calls planned against it will be refused (see postern audit revisions)`;
}

/** The shadow verdicts the Activity journal holds for the candidate with this digest. */
function readShadow(ctx: CliContext, digest: string): ShadowReport {
  if (!existsSync(ctx.paths.journalDir)) return shadowReport([], digest);
  const j = openJournals(ctx.paths.journalDir, { readonly: true });
  try {
    return shadowReport(j.activity.callHeads(), digest);
  } finally {
    j.close();
  }
}

function printReport(ctx: CliContext, report: GateReport, json: boolean, retired: readonly RetiredInUse[] = [], window = DEFAULT_WINDOW, shadow?: ShadowReport): void {
  if (json) {
    ctx.out(JSON.stringify({ ...(gateReportJson(report) as Record<string, unknown>), retired_in_use: { window, revisions: retired }, ...(shadow === undefined ? {} : { shadow }) }, null, 2));
    return;
  }
  ctx.out(renderGateReport(report));
  for (const r of retired) ctx.out(retirementLine(r, window));
  if (shadow !== undefined) ctx.out(renderShadowReport(shadow));
}

function gateError(report: GateReport): PosternError {
  const n = report.failures.length + report.historicalFailures.length;
  return new PosternError('RELEASE_GATE_FAILED', `the release gate failed (${n} problem${n === 1 ? '' : 's'}); see the report above`);
}

interface CheckOpts {
  against?: string;
  againstJournal?: string | boolean;
  window?: string;
  shadow?: boolean;
  json?: boolean;
  format?: string;
}

const FORMATS = ['text', 'json', 'github'] as const;
type Format = (typeof FORMATS)[number];

function formatOf(o: CheckOpts): Format {
  if (o.format === undefined) return o.json === true ? 'json' : 'text';
  const f = FORMATS.find((x) => x === o.format);
  if (f === undefined) throw new PosternError('USAGE', `--format must be one of ${FORMATS.join(', ')}`);
  if (o.json === true && f !== 'json') throw new PosternError('USAGE', '--json and --format disagree: give one of them');
  return f;
}

/** `--format github`: a catalog that does not parse still gets its annotations, then fails as usual. */
async function loadForFormat(path: string, format: Format, ctx: CliContext): Promise<{ catalog: Catalog; text: string; digest: string }> {
  try {
    return await loadCatalogFile(path);
  } catch (e) {
    const issues = e instanceof PosternError && e.code === 'CATALOG_INVALID' ? e.details['issues'] : undefined;
    if (format === 'github' && Array.isArray(issues)) for (const line of invalidCatalogAnnotations(path, issues.map(String))) ctx.out(line);
    throw e;
  }
}

export function registerCatalog(program: Command): void {
  const catalog = program.command('catalog').description('start, check, show and accept the tool catalog').addHelpText('after', examples([
    'postern catalog new       # a commented starter catalog.yaml to edit',
    'postern catalog check',
    'postern catalog accept    # shows the classified diff, then asks for the passphrase',
  ]));
  registerNew(catalog);
  registerCheck(catalog);
  registerShadow(catalog);
  registerShow(catalog);
  registerAccept(catalog);
}

function registerNew(catalog: Command): void {
  catalog
    .command('new [file]')
    .description(`write a commented starter catalog to catalog.yaml (or FILE), never over an existing one; it uses the secret \`${STARTER_SECRET}\``)
    .addHelpText('after', examples([`postern secret add ${STARTER_SECRET} --kind http_bearer && postern catalog new && postern catalog check`]))
    .action((file: string | undefined, _o: unknown, cmd: Command) => {
      const ctx = contextFor(cmd);
      const path = file ?? ctx.paths.catalog;
      writeStarterCatalog(path);
      ctx.out(`wrote a starter catalog to ${clean(path, 200)}: edit it (docs/catalog.md), then \`postern catalog check\` and \`postern catalog accept\``);
    });
}

function registerCheck(catalog: Command): void {
  catalog
    .command('check [file]')
    .description('classify the changes of a catalog against the accepted one (or --against FILE) and run the release gate')
    .option('--against <file>', 'compare with this catalog file instead of the accepted one')
    .option('--against-journal [jsonl]', 'revalidate journaled raw arguments (from the Activity journal, or a JSONL file) against the candidate')
    .option('--window <age>', `warn when a revision this catalog retires was called within this age (default ${DEFAULT_WINDOW})`, DEFAULT_WINDOW)
    .option('--shadow', 'report how calls planned in shadow against this catalog diverged; fail above 1% for any tool')
    .option('--json', 'print JSON (the same as --format json)')
    .option('--format <format>', 'text (default), json, or github: GitHub Actions annotations on the lines of the changed tools and revisions')
    .addHelpText('after', examples([
      'postern catalog check                      # ~/.postern/catalog.yaml against the accepted one',
      'postern catalog check catalog.yaml --against base.yaml --format github   # in a pull request\'s CI, no passphrase',
      'postern catalog check new.yaml --against old.yaml',
      'postern catalog check --against-journal    # would past calls still validate?',
    ]))
    .action((file: string | undefined, o: CheckOpts, cmd: Command) => checkCatalog(contextFor(cmd), file, o));
}

/** `postern catalog check`: the release gate of a candidate against the accepted catalog (or --against). */
async function checkCatalog(ctx: CliContext, file: string | undefined, o: CheckOpts): Promise<void> {
  const format = formatOf(o);
  const candPath = file ?? ctx.paths.catalog;
  const cand = await loadForFormat(candPath, format, ctx);
  let old: Catalog | undefined;
  if (o.against !== undefined) {
    old = (await loadCatalogFile(o.against)).catalog;
  } else {
    const accepted = await readCatalogFile(ctx.paths.acceptedCatalog);
    if (accepted !== undefined) old = parseCatalog(accepted.text, ctx.paths.acceptedCatalog);
  }
  let history: HistoryRecord[] | undefined;
  if (typeof o.againstJournal === 'string') history = await readHistoryFile(o.againstJournal);
  else if (o.againstJournal === true) history = readHistoryJournal(ctx);
  const window = o.window ?? DEFAULT_WINDOW;
  const windowMs = parseWindow(window);
  const report = releaseGate(old, cand.catalog, history);
  const shadow = o.shadow === true ? readShadow(ctx, cand.digest) : undefined;
  if (format === 'github') for (const line of gateAnnotations(report, candPath, cand.text)) ctx.out(line);
  else printReport(ctx, report, format === 'json', retirementsInUse(ctx, old, cand.catalog, windowMs), window, shadow);
  if (!report.ok) throw gateError(report);
  if (shadow !== undefined && !shadow.ok) {
    throw new PosternError('RELEASE_GATE_FAILED', shadow.shadowed === 0 ? 'no call was planned in shadow against this catalog: the shadow shows nothing yet' : `the shadow diverged on more than ${shadow.threshold * 100}% of calls for ${shadow.tools.filter((t) => !t.ok).map((t) => clean(t.tool, 64)).join(', ')}`);
  }
}

function registerShadow(catalog: Command): void {
  const shadowCmd = catalog.command('shadow').description('run the pending catalog.yaml in shadow on the daemon: each call is also planned against it, with no effect (needs the passphrase)');
  shadowCmd
    .command('start')
    .description('start the shadow of catalog.yaml (or exactly the file with --digest)')
    .option('--digest <sha256>', 'the SHA-256 of the catalog.yaml you reviewed')
    .action(async (o: { digest?: string }, cmd: Command) => {
      const ctx = contextFor(cmd);
      const file = await readCatalogFile(ctx.paths.catalog);
      if (file === undefined) throw new PosternError('CATALOG_NOT_FOUND', `no catalog at ${ctx.paths.catalog}`);
      const digest = o.digest ?? file.digest;
      const r = await withOperator(ctx, {}, (c) => c.request('catalog.shadow', { digest }));
      ctx.out(`catalog ${(r.shadow ?? digest).slice(0, 16)}… runs in shadow; see \`postern catalog check --shadow\``);
    });
  shadowCmd
    .command('stop')
    .description('stop the shadow')
    .action(async (_o: unknown, cmd: Command) => {
      const ctx = contextFor(cmd);
      const r = await withOperator(ctx, {}, (c) => c.request('catalog.shadow', { digest: null }));
      ctx.out(r.stopped === null ? 'no catalog was running in shadow: nothing to stop' : `stopped the shadow of catalog ${r.stopped.slice(0, 16)}…`);
    });
}

function registerShow(catalog: Command): void {
  catalog
    .command('show')
    .description('list tools, current revisions and authority, and whether catalog.yaml is accepted or pending')
    .option('--json', 'print JSON')
    .option('--verify', 'check the acceptance record with the vault key (asks for the passphrase)')
    .action((o: { json?: boolean; verify?: boolean }, cmd: Command) => showCatalog(contextFor(cmd), o));
}

/** `postern catalog show`: the tools, revisions and authority, and the catalog's status. */
async function showCatalog(ctx: CliContext, o: { json?: boolean; verify?: boolean }): Promise<void> {
  const file = await readCatalogFile(ctx.paths.catalog);
  const stored = await readAcceptance(ctx.paths);
  let status: string;
  let alarm: PosternError | undefined;
  if (o.verify === true) {
    const pass = await ctx.unlockPassphrase();
    const v = await openVault(ctx.paths.vault, pass, ctx.vault).finally(() => pass.fill(0));
    try {
      const key = v.deriveKey('catalog-mac');
      const mark = v.acceptedCatalog;
      const { state } = await currentCatalogState(ctx.paths, key, mark);
      status = state.state === 'alarm' ? `alarm (${state.alarm}): ${state.message}` : state.state;
      if (state.state === 'alarm') alarm = alarmError(state);
      // Also proves the stored copy is the accepted bytes (CATALOG_UNAUTHENTICATED otherwise).
      else if (state.state === 'accepted' || state.state === 'pending') await loadAcceptedCatalog(ctx.paths, key, mark);
      const chain = verifyHistoryChain(key, await readHistory(ctx.paths), mark);
      status += chain.ok
        ? `\nhistory: ${chain.entries} authenticated acceptance${chain.entries === 1 ? '' : 's'}, chain verified${chain.legacy > 0 ? ` (after ${chain.legacy} unauthenticated line${chain.legacy === 1 ? '' : 's'} from Postern 0.1)` : ''}`
        : `\nhistory: DOES NOT VERIFY: ${chain.problem}`;
    } finally {
      v.lock();
    }
  } else if (stored.kind !== 'stored') {
    status = `${stored.kind === 'malformed' ? 'malformed record' : file === undefined ? 'no_catalog' : 'unaccepted'} (not verified; use --verify)`;
  } else {
    status = `${file === undefined || file.digest === stored.record.digest ? 'accepted' : 'pending'} (not verified; use --verify)`;
  }
  if (alarm !== undefined) {
    ctx.out(`status: ${status}`);
    throw alarm;
  }
  const shown = await readCatalogFile(stored.kind !== 'stored' ? ctx.paths.catalog : ctx.paths.acceptedCatalog);
  if (shown === undefined) {
    if (o.json === true) ctx.out(JSON.stringify({ status, tools: [] }, null, 2));
    else ctx.out(`status: ${status}\nno catalog yet: write ${ctx.paths.catalog} (see docs/catalog.md)`);
    return;
  }
  const cat = parseCatalog(shown.text, shown.path);
  if (o.json === true) {
    ctx.out(JSON.stringify({ status, file: shown.path, ...catalogSummaryJson(cat, shown.digest) }, null, 2));
  } else {
    ctx.out(`status: ${status}\nshowing: ${shown.path} (sha256 ${shown.digest.slice(0, 16)}…)`);
    ctx.out(renderCatalogSummary(cat));
  }
}

function registerAccept(catalog: Command): void {
  catalog
    .command('accept')
    .description('adopt catalog.yaml after showing the classified diff (needs the passphrase)')
    .option('-y, --yes', 'do not ask for confirmation when the diff is against an authenticated accepted catalog')
    .option('--digest <sha256>', 'accept exactly the file with this SHA-256 (the one you reviewed); works without a terminal, also for a first catalog')
    .option('--force', 'accept even when the release gate fails')
    .option('--json', 'print the report as JSON')
    .addHelpText('after', examples([
      'postern catalog accept                     # shows the diff, asks, then asks for the passphrase',
      'postern catalog accept --digest <sha256>   # accept exactly the reviewed file, no terminal needed',
    ]))
    .action(async (o: AcceptOpts, cmd: Command) => {
      await acceptCatalog(contextFor(cmd), o);
    });
}
